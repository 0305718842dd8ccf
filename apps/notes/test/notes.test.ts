import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { sql } from "kysely";
import { loadNotesConfig } from "../src/config.ts";
import { openNotesService } from "../src/service.ts";
import { nextNoteSeq } from "../src/store/notes.ts";
import { openTestNotes, type Person, START, type TestNotes } from "./support/harness.ts";

interface NoteJson {
  id: string;
  title: string;
  content: unknown;
  contentText: string;
  createdAt: string;
  updatedAt: string;
  tags: { id: string; name: string; createdAt: string }[];
}

async function expect400(response: Response, error: string, field?: string) {
  assert.equal(response.status, 400);
  const body = (await response.json()) as {
    error: string;
    details?: { fieldErrors: Record<string, string[]>; formErrors: string[] };
  };
  assert.equal(body.error, error);
  if (field) {
    assert.ok(body.details, "details are present");
    assert.ok(Array.isArray(body.details.formErrors));
    assert.ok(body.details.fieldErrors[field]?.length, `details name ${field}`);
  }
}

/** Another notes service on the same database, reading every list on its own thread. */
async function openSecondService(notes: TestNotes, engine: string) {
  const loaded = loadNotesConfig({
    DATA_DIR: notes.database.dataDir,
    DATABASE_URL: notes.database.databaseUrl,
    READER_THREADS: "0",
  });
  assert.ok(loaded.ok && engine && loaded.config.readerThreads === 0);
  return openNotesService(loaded.config, {
    clock: notes.now,
    verifier: notes.service.ctx.verifier,
    logger: notes.service.logger,
  });
}

for (const engine of testEngines()) {
  describe(`notes API: notes (${engine})`, () => {
    let notes: TestNotes;
    let ada: Person;

    before(async () => {
      notes = await openTestNotes(engine);
      ada = await notes.person("ada@example.com");
    });
    after(() => notes.close());

    const create = async (person: Person, body: Record<string, unknown>) => {
      const response = await person.call("POST", "/api/notes", body);
      assert.equal(response.status, 201, await response.clone().text());
      return ((await response.json()) as { note: NoteJson }).note;
    };
    const list = async (person: Person, query = "") => {
      const response = await person.call("GET", `/api/notes${query}`);
      assert.equal(response.status, 200, await response.clone().text());
      return (await response.json()) as { notes: NoteJson[]; total: number };
    };

    it("hands out no query builder from its store: every read and write is an operation", () => {
      assert.equal("db" in notes.store, false);
      assert.deepEqual(
        Object.values(notes.store).filter((value) => typeof value === "object"),
        [notes.store.userCacheLookups],
      );
    });

    describe("POST /api/notes", () => {
      it("answers 201 with the note, dates in ISO 8601 with milliseconds", async () => {
        const note = await create(ada, {
          title: "  First note  ",
          content: [{ type: "p", text: "hi" }],
          contentText: "hi",
        });
        assert.match(note.id, /^[0-9a-f-]{36}$/);
        assert.deepEqual(
          { ...note, id: "x" },
          {
            id: "x",
            title: "First note",
            content: [{ type: "p", text: "hi" }],
            contentText: "hi",
            createdAt: new Date(notes.now()).toISOString(),
            updatedAt: new Date(notes.now()).toISOString(),
            tags: [],
          },
        );
        assert.match(note.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      });

      it("defaults content to [] and contentText to an empty string, with no tags", async () => {
        const note = await create(ada, { title: "Bare" });
        assert.deepEqual(note.content, []);
        assert.equal(note.contentText, "");
        assert.deepEqual(note.tags, []);
      });

      it('keeps every key of a content document, a "__proto__" key included, through every read', async () => {
        const document = '{"10":true,"__proto__":{"x":1},"a":[{"__proto__":2,"constructor":3}]}';
        const created = await ada.call(
          "POST",
          "/api/notes",
          undefined,
          `{"title":"prototype keys","content":${document}}`,
        );
        assert.equal(created.status, 201);
        const { note } = (await created.json()) as { note: NoteJson };
        const id = note.id;
        assert.equal(JSON.stringify(note.content), document);
        const read = (await (await ada.call("GET", `/api/notes/${id}`)).json()) as {
          note: NoteJson;
        };
        assert.equal(JSON.stringify(read.note.content), document);
        const listed = (await list(ada, "?limit=500")).notes.find((one) => one.id === id);
        assert.equal(JSON.stringify(listed?.content), document);
        const found = (await list(ada, "?search=prototype")).notes.find((one) => one.id === id);
        assert.equal(JSON.stringify(found?.content), document);
        const patched = await ada.call(
          "PATCH",
          `/api/notes/${id}`,
          undefined,
          `{"content":{"__proto__":null}}`,
        );
        assert.equal(patched.status, 200);
        const after = (await patched.json()) as { note: NoteJson };
        assert.equal(JSON.stringify(after.note.content), '{"__proto__":null}');
      });

      it("ignores unknown fields", async () => {
        const note = await create(ada, {
          title: "Extra",
          id: "mine",
          userId: "someone",
          createdAt: "1999",
        });
        assert.notEqual(note.id, "mine");
        assert.equal(note.createdAt, new Date(notes.now()).toISOString());
      });

      it("accepts titles of 1 and 500 characters after trimming, counted as characters", async () => {
        assert.equal((await create(ada, { title: " a " })).title, "a");
        assert.equal((await create(ada, { title: "é".repeat(500) })).title.length, 500);
        assert.equal([...(await create(ada, { title: "😀".repeat(500) })).title].length, 500);
      });

      it("answers 400 Invalid request body with details for a bad title", async () => {
        for (const title of [undefined, "", "   ", "x".repeat(501), 42, null, ["t"]]) {
          await expect400(
            await ada.call("POST", "/api/notes", { title }),
            "Invalid request body",
            "title",
          );
        }
      });

      it("answers 400 Invalid request body for bad types of the other fields", async () => {
        await expect400(
          await ada.call("POST", "/api/notes", { title: "t", contentText: 5 }),
          "Invalid request body",
          "contentText",
        );
        await expect400(
          await ada.call("POST", "/api/notes", { title: "t", tagIds: ["nope"] }),
          "Invalid request body",
          "tagIds",
        );
        await expect400(
          await ada.call("POST", "/api/notes", { title: "t", tagIds: "x" }),
          "Invalid request body",
          "tagIds",
        );
        await expect400(await ada.call("POST", "/api/notes", [1, 2]), "Invalid request body");
        await expect400(
          await ada.call("POST", "/api/notes", "just a string"),
          "Invalid request body",
        );
      });

      it("answers 400 Request body must be valid JSON for malformed or empty bodies", async () => {
        for (const raw of ["{", "title=x", "", "{'title':'x'}", '{"title":"x",}']) {
          await expect400(
            await ada.call("POST", "/api/notes", undefined, raw),
            "Request body must be valid JSON",
          );
        }
      });

      it("refuses hostile strings with a 400, never a 500", async () => {
        const hostile = [
          { title: "nul\u0000byte" },
          { title: "ok", contentText: "nul\u0000" },
          { title: "x".repeat(10_000) },
        ];
        for (const body of hostile) {
          const response = await ada.call("POST", "/api/notes", body);
          assert.equal(response.status, 400, JSON.stringify(body).slice(0, 40));
        }
        const loneSurrogate = '{"title":"\\ud800 alone"}';
        await expect400(
          await ada.call("POST", "/api/notes", undefined, loneSurrogate),
          "Invalid request body",
          "title",
        );
        const deep = `{"title":"deep","content":${"[".repeat(100)}${"]".repeat(100)}}`;
        await expect400(
          await ada.call("POST", "/api/notes", undefined, deep),
          "Invalid request body",
        );
        const strange = await create(ada, {
          title: "<script>alert(1)</script> ' OR 1=1 --",
          contentText: "%_\\",
        });
        assert.equal(strange.title, "<script>alert(1)</script> ' OR 1=1 --");
      });

      it("answers 413 Request body too large over 1 MiB", async () => {
        const response = await ada.call("POST", "/api/notes", {
          title: "big",
          contentText: "x".repeat(1024 * 1024),
        });
        assert.equal(response.status, 413);
        assert.deepEqual(await response.json(), {
          error: "Request body too large",
          code: "body_too_large",
        });
      });
    });

    describe("GET /api/notes", () => {
      let reader: Person;
      before(async () => {
        reader = await notes.person();
        for (const [i, title] of [
          "Kubernetes cluster",
          "Grocery list",
          "Café Été notes",
          "100% done_ok",
        ].entries()) {
          notes.advance(1000);
          await create(reader, {
            title,
            contentText: i === 1 ? "milk eggs kube-proxy" : `body ${i}`,
          });
        }
      });

      it("lists newest-updated first with the total", async () => {
        const page = await list(reader);
        assert.equal(page.total, 4);
        assert.deepEqual(
          page.notes.map((note) => note.title),
          ["100% done_ok", "Café Été notes", "Grocery list", "Kubernetes cluster"],
        );
      });

      it("pages with limit and offset, total counting every match", async () => {
        const page = await list(reader, "?limit=2&offset=1");
        assert.equal(page.total, 4);
        assert.deepEqual(
          page.notes.map((note) => note.title),
          ["Café Été notes", "Grocery list"],
        );
        assert.equal((await list(reader, "?offset=10")).notes.length, 0);
        assert.equal((await list(reader, "?limit=500")).notes.length, 4);
        assert.equal((await list(reader, "?limit=1")).notes.length, 1);
      });

      it("keeps the total right through creates and deletes, past the last page and with filters", async () => {
        const person = await notes.person();
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          const created = await person.call("POST", "/api/notes", { title: `kept ${i}` });
          ids.push(((await created.json()) as { note: { id: string } }).note.id);
        }
        await person.call("DELETE", `/api/notes/${ids[0]}`);
        await person.call("DELETE", `/api/notes/${ids[0]}`); // a second delete changes nothing
        assert.equal((await list(person)).total, 4);
        assert.equal((await list(person, "?offset=50")).total, 4, "past the last page");
        assert.equal(
          (await list(person, "?search=kept&offset=50")).total,
          4,
          "searched, past the last page",
        );
        assert.equal((await list(person, "?search=kept 3")).total, 1);
        assert.equal((await list(reader)).total, 4, "another person's count is untouched");
      });

      it("lists each note exactly as GET /api/notes/:id reads it, tags in name order, any text", async () => {
        // The list reads notes and their tags in one statement (tags as JSON built by the
        // database); a single note is read by another path. They must agree to the byte.
        const person = await notes.person();
        const hostile = [
          'say "hi" \\ back',
          "ünïcödé 😀 ☃",
          "tab\tnew\nline\u0001\u001f",
          "Zed",
          "alpha",
        ];
        const tagIds: string[] = [];
        for (const name of hostile) {
          notes.advance(7);
          const response = await person.call("POST", "/api/tags", { name });
          assert.equal(response.status, 201, await response.clone().text());
          tagIds.push(((await response.json()) as { tag: { id: string } }).tag.id);
        }
        const created = [];
        for (const [i, title] of hostile.entries()) {
          notes.advance(1001);
          created.push(
            await create(person, {
              title,
              content: [{ type: "p", text: title, n: i, deep: { list: [1.5, null, true] } }],
              contentText: `${title} body`,
              tagIds: tagIds.slice(0, i + 1),
            }),
          );
        }
        notes.advance(1001);
        await create(person, { title: "untagged" });
        const expectSame = async (query: string, expectedCount: number) => {
          const page = await list(person, query);
          assert.equal(page.notes.length, expectedCount, query);
          for (const listed of page.notes) {
            const single = await person.call("GET", `/api/notes/${listed.id}`);
            assert.deepEqual({ note: listed }, await single.json(), query);
          }
          return page;
        };
        const plain = await expectSame("", 6);
        assert.deepEqual(
          plain.notes[1]?.tags.map((tag) => tag.name),
          ["alpha", 'say "hi" \\ back', "tab\tnew\nline\u0001\u001f", "Zed", "ünïcödé 😀 ☃"],
          "tags ordered by name ignoring case",
        );
        assert.deepEqual(plain.notes[0]?.tags, []);
        await expectSame("?limit=2&offset=1", 2);
        await expectSame(`?tagId=${tagIds[2]}`, 3);
        await expectSame(`?search=${encodeURIComponent("😀")}`, 1);
        await expectSame(`?search=${encodeURIComponent('"hi" body')}`, 1);
      });

      it("defaults to 100 notes a page", async () => {
        const many = await notes.person();
        for (let i = 0; i < 101; i++) await create(many, { title: `n${i}` });
        const page = await list(many);
        assert.equal(page.notes.length, 100);
        assert.equal(page.total, 101);
      });

      it("answers 400 Invalid query parameters with details for bad limit, offset or tagId", async () => {
        for (const [query, field] of [
          ["?limit=0", "limit"],
          ["?limit=501", "limit"],
          ["?limit=abc", "limit"],
          ["?limit=1.5", "limit"],
          ["?limit=", "limit"],
          ["?offset=-1", "offset"],
          ["?offset=x", "offset"],
          ["?tagId=not-a-uuid", "tagId"],
          ["?search=%00", "search"],
        ] as const) {
          await expect400(
            await reader.call("GET", `/api/notes${query}`),
            "Invalid query parameters",
            field,
          );
        }
      });

      it("searches case-insensitive substrings of title or contentText, every term required", async () => {
        const titles = async (search: string) =>
          (await list(reader, `?search=${encodeURIComponent(search)}`)).notes.map(
            (note) => note.title,
          );
        assert.deepEqual(await titles("kube"), ["Grocery list", "Kubernetes cluster"]);
        assert.deepEqual(await titles("KUBE cluster"), ["Kubernetes cluster"]);
        assert.deepEqual(await titles("kube milk"), ["Grocery list"]);
        assert.deepEqual(await titles("kube nothing"), []);
        assert.deepEqual(await titles("café été"), ["Café Été notes"]);
        assert.deepEqual(await titles("  list   "), ["Grocery list"]);
        assert.equal((await list(reader, "?search=kube")).total, 2);
      });

      it("finds terms shorter than 3 characters, and treats % _ \\ literally", async () => {
        const titles = async (search: string) =>
          (await list(reader, `?search=${encodeURIComponent(search)}`)).notes.map(
            (note) => note.title,
          );
        assert.deepEqual(await titles("gr"), ["Grocery list"]);
        assert.deepEqual(await titles("k"), ["100% done_ok", "Grocery list", "Kubernetes cluster"]);
        assert.deepEqual(await titles("%"), ["100% done_ok"]);
        assert.deepEqual(await titles("_"), ["100% done_ok"]);
        assert.deepEqual(await titles("e_o"), ["100% done_ok"]);
        assert.deepEqual(await titles("0%"), ["100% done_ok"]);
        assert.deepEqual(await titles("\\"), []);
        assert.deepEqual(await titles('"'), []);
      });

      it("finds a note as soon as it is created, and after it is renamed by its new title only", async () => {
        const note = await create(reader, { title: "Zeppelin plans" });
        assert.deepEqual(
          (await list(reader, "?search=zeppelin")).notes.map((n) => n.id),
          [note.id],
        );
        await reader.call("PATCH", `/api/notes/${note.id}`, { title: "Airship plans" });
        assert.equal((await list(reader, "?search=zeppelin")).total, 0);
        assert.equal((await list(reader, "?search=airship")).total, 1);
        await reader.call("DELETE", `/api/notes/${note.id}`);
        assert.equal((await list(reader, "?search=airship")).total, 0);
      });

      it("reads a filtered list as a reference filter and sort would, on reader threads or not", async () => {
        // SQLite reads searches and tag filters on reader threads (READER_THREADS, 2 or more
        // here); a second service on the same file reads them on its own thread. Both must give
        // what filtering and sorting every note in JavaScript gives: same order (updatedAt, then
        // id, so the many notes created in the same millisecond tie), same total, every page.
        const person = await notes.person();
        const tag = (await (await person.call("POST", "/api/tags", { name: "pick" })).json()) as {
          tag: { id: string };
        };
        const words = ["alpha", "beta", "Gamma", "al", "ALPHA beta"];
        for (let i = 0; i < 40; i++) {
          await create(person, {
            title: `${words[i % 5]} ${i}`,
            contentText: i % 3 === 0 ? "beta body" : "body",
            tagIds: i % 4 === 0 ? [tag.tag.id] : [],
          });
          if (i % 7 === 0) notes.advance(1);
        }
        const all = (await list(person, "?limit=500")).notes.sort(
          (a, b) => b.updatedAt.localeCompare(a.updatedAt) || (a.id < b.id ? -1 : 1),
        );
        const user = await notes.store.findUserByEmail(person.email.toLowerCase());
        assert.ok(user);
        const own = await openSecondService(notes, engine);
        try {
          for (const [search, tagged] of [
            ["alpha", false],
            ["beta", false],
            ["al", false],
            ["alpha beta", false],
            ["gamma", true],
            [undefined, true],
            ["nothing", false],
          ] as const) {
            const expected = all.filter(
              (note) =>
                (!tagged || note.tags.some((t) => t.id === tag.tag.id)) &&
                (search ?? "")
                  .split(" ")
                  .every((term) =>
                    `${note.title}\n${note.contentText}`.toLowerCase().includes(term.toLowerCase()),
                  ),
            );
            for (const [limit, offset] of [
              [100, 0],
              [3, 0],
              [3, 5],
              [5, 100],
            ] as const) {
              const query = { search, tagId: tagged ? tag.tag.id : undefined, limit, offset };
              const label = JSON.stringify(query);
              for (const store of engine === "sqlite"
                ? [notes.store, own.ctx.store]
                : [notes.store]) {
                const page = await store.listNotes(user.id, query);
                assert.equal(page.total, expected.length, label);
                assert.deepEqual(
                  page.notes.map((note) => note.id),
                  expected.slice(offset, offset + limit).map((note) => note.id),
                  label,
                );
              }
            }
          }
        } finally {
          await own.close();
        }
      });
    });

    describe("search within one user's notes, at every density of matches", () => {
      it("walks newest-first or orders every match, and answers as a reference would either way", async () => {
        // Two people write the same words, interleaved. For one of them: a word in the newest
        // notes (the walk down the newest-first index finds a page), one in the oldest (a walk
        // would run out: the matches are looked up and ordered instead), one in every note,
        // one rare. Totals and pages must be each person's own, as a filter and sort in
        // JavaScript gives them, on every page shape.
        const [ann, bob] = [await notes.person(), await notes.person()];
        for (let i = 0; i < 120; i++) {
          for (const person of [ann, bob]) {
            const words = [
              i < 40 ? "oldword" : "",
              i >= 80 ? "newword" : "",
              i % 50 === 7 ? "rareword" : "",
              "everyword",
            ];
            await create(person, { title: `n${i} ${words.join(" ")}`, contentText: `c${i}` });
          }
          if (i % 9 === 0) notes.advance(1);
        }
        // Updated notes move to the front of the newest-first order: three of Ann's oldest, and
        // thirty in the middle, which puts Ann's newest matches of "newword" behind notes that
        // were created before them (a walk sized by creation order runs out there).
        const old = (await list(ann, "?search=oldword&limit=500")).notes.slice(0, 3);
        const middle = (await list(ann, "?limit=500")).notes.filter((note) =>
          /^n(4\d|5\d|6\d) /.test(note.title),
        );
        for (const note of [...old, ...middle]) {
          notes.advance(1);
          const patched = await ann.call("PATCH", `/api/notes/${note.id}`, { contentText: "x" });
          assert.equal(patched.status, 200);
        }
        for (const person of [ann, bob]) {
          const all = (await list(person, "?limit=500")).notes.sort(
            (a, b) => b.updatedAt.localeCompare(a.updatedAt) || (a.id < b.id ? -1 : 1),
          );
          assert.equal(all.length, 120);
          const user = await notes.store.findUserByEmail(person.email.toLowerCase());
          assert.ok(user);
          for (const search of ["newword", "oldword", "everyword", "rareword", "word n11", "zzz"]) {
            const expected = all.filter((note) =>
              search
                .split(" ")
                .every((term) => `${note.title}\n${note.contentText}`.toLowerCase().includes(term)),
            );
            for (const [limit, offset] of [
              [1, 0],
              [3, 0],
              [20, 0],
              [10, 30],
              [500, 0],
              [5, 200],
            ] as const) {
              const label = `${person.email} ${search} ${limit}/${offset}`;
              const page = await notes.store.listNotes(user.id, { search, limit, offset });
              assert.equal(page.total, expected.length, label);
              assert.deepEqual(
                page.notes.map((note) => note.id),
                expected.slice(offset, offset + limit).map((note) => note.id),
                label,
              );
            }
          }
        }
      });

      if (engine === "sqlite") {
        it("keeps every note's rowid in its user's range, and refuses one outside it", async () => {
          const person = await notes.person();
          await create(person, { title: "ranged" });
          const { db } = notes;
          const strays = await sql<{ n: number }>`SELECT count(*) AS n FROM notes
            JOIN users u ON u.id = notes.user_id WHERE notes.seq >> 32 != u.number`.execute(db);
          assert.equal(strays.rows[0]?.n, 0);
          const user = await notes.store.findUserByEmail(person.email.toLowerCase());
          assert.ok(user);
          await assert.rejects(
            sql`INSERT INTO notes (id, user_id, title, content, content_text, created_at, updated_at)
              VALUES (${crypto.randomUUID()}, ${user.id}, 't', '[]', '', 0, 0)`.execute(db),
            /seq must lie in its user's range/,
          );
          // In its range, the same note is taken.
          await sql`INSERT INTO notes (seq, id, user_id, title, content, content_text, created_at, updated_at)
            VALUES (${nextNoteSeq(user.id)}, ${crypto.randomUUID()}, ${user.id}, 't', '[]', '', 0, 0)`.execute(
            db,
          );
        });
      }
    });

    describe("one note: GET, PATCH, DELETE /api/notes/:id", () => {
      it("reads a note, 404 for an unknown id, 400 for a malformed id", async () => {
        const note = await create(ada, { title: "Readable" });
        const response = await ada.call("GET", `/api/notes/${note.id}`);
        assert.deepEqual(await response.json(), { note });
        const upper = await ada.call("GET", `/api/notes/${note.id.toUpperCase()}`);
        assert.equal(upper.status, 200);
        const unknown = await ada.call("GET", `/api/notes/${crypto.randomUUID()}`);
        assert.equal(unknown.status, 404);
        assert.deepEqual(await unknown.json(), { error: "Note not found", code: "note_not_found" });
        for (const id of ["nope", "1", "%00", `${note.id}x`]) {
          const bad = await ada.call("GET", `/api/notes/${id}`);
          assert.equal(bad.status, 400, id);
          assert.deepEqual(await bad.json(), { error: "Invalid note id", code: "invalid_note_id" });
        }
      });

      it("PATCH changes the given fields and updatedAt, never createdAt", async () => {
        const note = await create(ada, { title: "Before", contentText: "keep", content: ["a"] });
        notes.advance(5000);
        const response = await ada.call("PATCH", `/api/notes/${note.id}`, { title: " After " });
        assert.equal(response.status, 200);
        const { note: patched } = (await response.json()) as { note: NoteJson };
        assert.equal(patched.title, "After");
        assert.equal(patched.contentText, "keep");
        assert.deepEqual(patched.content, ["a"]);
        assert.equal(patched.createdAt, note.createdAt);
        assert.equal(patched.updatedAt, new Date(notes.now()).toISOString());
        notes.advance(5000);
        const empty = (await (await ada.call("PATCH", `/api/notes/${note.id}`, {})).json()) as {
          note: NoteJson;
        };
        assert.equal(
          empty.note.updatedAt,
          new Date(notes.now()).toISOString(),
          "every PATCH moves updatedAt",
        );
        notes.advance(5000);
        await ada.call("GET", `/api/notes/${note.id}`);
        const read = (await (await ada.call("GET", `/api/notes/${note.id}`)).json()) as {
          note: NoteJson;
        };
        assert.equal(read.note.updatedAt, empty.note.updatedAt, "reads do not");
        assert.ok(Date.parse(patched.createdAt) >= START);
      });

      it("PATCH answers with the same errors as POST", async () => {
        const note = await create(ada, { title: "Patchable" });
        await expect400(
          await ada.call("PATCH", `/api/notes/${note.id}`, { title: "" }),
          "Invalid request body",
          "title",
        );
        await expect400(
          await ada.call("PATCH", `/api/notes/${note.id}`, undefined, "{"),
          "Request body must be valid JSON",
        );
        const unknown = await ada.call("PATCH", `/api/notes/${crypto.randomUUID()}`, {
          title: "x",
        });
        assert.equal(unknown.status, 404);
        const bad = await ada.call("PATCH", "/api/notes/nope", { title: "x" });
        assert.deepEqual(await bad.json(), { error: "Invalid note id", code: "invalid_note_id" });
      });

      it("DELETE answers 204, then the note is gone", async () => {
        const note = await create(ada, { title: "Doomed" });
        const response = await ada.call("DELETE", `/api/notes/${note.id}`);
        assert.equal(response.status, 204);
        assert.equal(await response.text(), "");
        assert.equal((await ada.call("GET", `/api/notes/${note.id}`)).status, 404);
        assert.equal((await ada.call("DELETE", `/api/notes/${note.id}`)).status, 404);
      });
    });
  });
}
