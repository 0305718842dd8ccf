/**
 * Where a create's time goes in the notes store on SQLite: creates run straight on the store (no
 * HTTP, no authentication), one at a time and 50 at once (one user's, which share a transaction), on the database
 * as the service opens it, then without the full-text index's trigger, then with SQLite's own
 * checkpoints in the commits instead of the service's checkpoint thread. Each variant runs twice,
 * in alternation.
 *
 *   node bench/notes-create.ts
 *   node bench/notes-create.ts --creates 10000
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openDatabase } from "@agentpass/db";
import { NOTES_CACHE_MB } from "../apps/notes/src/service.ts";
import { notesMigrations } from "../apps/notes/src/store/migrations.ts";
import type { NotesDatabase } from "../apps/notes/src/store/schema.ts";
import { createNotesStore } from "../apps/notes/src/store/store.ts";

const { values } = parseArgs({ options: { creates: { type: "string", default: "3000" } } });
const creates = Number(values.creates);
const VARIANTS = ["as the service runs", "no full-text index", "SQLite's checkpoints"] as const;

for (const variant of [...VARIANTS, ...VARIANTS]) {
  const dir = mkdtempSync(join(tmpdir(), "agentpass-notes-create-"));
  const database = openDatabase<NotesDatabase>({
    databaseUrl: undefined,
    dataDir: dir,
    fileName: "notes.sqlite",
    cacheMb: NOTES_CACHE_MB,
    checkpointThread: variant !== "SQLite's checkpoints",
  });
  try {
    await database.migrate("notes", notesMigrations(database.engine));
    if (variant === "no full-text index")
      if (database.handles.engine === "sqlite")
        database.handles.sqlite.exec("DROP TRIGGER notes_search_insert");
    const store = createNotesStore(database);
    const user = await store.addUser("writer@example.com", Date.now());
    if (!user) throw new Error("the user exists");
    const fields = { title: "Bench note", content: null, contentText: "written under load" };
    for (const concurrency of [1, 50]) {
      const started = performance.now();
      for (let done = 0; done < creates; done += concurrency) {
        await Promise.all(
          Array.from({ length: concurrency }, () =>
            store.createNote(user.id, fields, [], Date.now()),
          ),
        );
      }
      const perCreate = ((performance.now() - started) * 1000) / creates;
      console.log(
        `${variant.padEnd(24)} ${String(concurrency).padStart(2)} at once: ${perCreate.toFixed(0)} µs a create`,
      );
    }
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
