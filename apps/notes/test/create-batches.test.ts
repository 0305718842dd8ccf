import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import fc from "fast-check";
import { sql } from "kysely";
import { type BatchLimits, batchesByKey, type Outcome } from "../src/store/batches-by-key.ts";
import { openTestNotes, type Person, type TestNotes } from "./support/harness.ts";

const CONCURRENT = 40;

for (const engine of testEngines()) {
  describe(`notes API: concurrent creates of one user (${engine})`, () => {
    let notes: TestNotes;
    before(async () => {
      notes = await openTestNotes(engine);
    });
    after(() => notes.close());

    async function tagOf(person: Person, name: string): Promise<string> {
      const response = await person.call("POST", "/api/tags", { name });
      assert.equal(response.status, 201);
      return ((await response.json()) as { tag: { id: string } }).tag.id;
    }

    async function userIdOf(person: Person): Promise<string> {
      const user = await notes.store.findUserByEmail(person.email.toLowerCase());
      assert.ok(user);
      return user.id;
    }

    it(`writes ${CONCURRENT} at once, each with the tags it asked for and owns, counted exactly`, async () => {
      const ada = await notes.person();
      const bob = await notes.person();
      const [red, blue] = [await tagOf(ada, "red"), await tagOf(ada, "blue")];
      const bobs = await tagOf(bob, "bob's");
      const asked = Array.from({ length: CONCURRENT }, (_, n) => ({
        title: `note ${n}`,
        contentText: "é".repeat(n),
        // Every third note also names Bob's tag, which is not Ada's to give: it is ignored.
        tagIds: [[], [red], [blue, red], [red, bobs]][n % 4] as string[],
      }));
      const answers = await Promise.all(asked.map((body) => ada.call("POST", "/api/notes", body)));
      assert.deepEqual(
        answers.map((answer) => answer.status),
        asked.map(() => 201),
      );
      const created = await Promise.all(
        answers.map(
          async (answer) =>
            (
              (await answer.json()) as {
                note: { id: string; title: string; tags: { id: string }[] };
              }
            ).note,
        ),
      );
      for (const [n, note] of created.entries()) {
        const want = (asked[n]?.tagIds ?? []).filter((id) => id !== bobs);
        assert.equal(note.title, `note ${n}`);
        assert.deepEqual(note.tags.map((tag) => tag.id).sort(), [...want].sort());
        const read = await ada.call("GET", `/api/notes/${note.id}`);
        const stored = ((await read.json()) as { note: typeof note }).note;
        assert.deepEqual(stored, note);
      }
      const list = await ada.call("GET", `/api/notes?limit=100`);
      const page = (await list.json()) as { total: number; notes: { id: string }[] };
      assert.equal(page.total, CONCURRENT);
      assert.deepEqual(
        page.notes.map((note) => note.id).sort(),
        created.map((note) => note.id).sort(),
      );
      const userId = await userIdOf(ada);
      const { rows } = await sql<{ note_count: number; text_bytes: number; counted: number }>`
        SELECT note_count, text_bytes, (
          SELECT sum(octet_length(title) + octet_length(content) + octet_length(content_text))
          FROM notes WHERE user_id = ${userId}
        ) AS counted FROM users WHERE id = ${userId}`.execute(notes.db);
      assert.equal(Number(rows[0]?.note_count), CONCURRENT);
      assert.equal(Number(rows[0]?.text_bytes), Number(rows[0]?.counted));
    });

    it("keeps each user's counters when one statement deletes notes of several users", async () => {
      const people = [await notes.person(), await notes.person()];
      for (const person of people) {
        const answers = await Promise.all(
          Array.from({ length: 6 }, (_, n) =>
            person.call("POST", "/api/notes", { title: `shared ${n % 2 ? "keep" : "drop"}` }),
          ),
        );
        assert.ok(answers.every((answer) => answer.status === 201));
      }
      const ids = await Promise.all(people.map(userIdOf));
      await sql`DELETE FROM notes WHERE title = 'shared drop' AND user_id IN (${sql.join(ids)})`.execute(
        notes.db,
      );
      for (const id of ids) {
        const { rows } = await sql<{ note_count: number; text_bytes: number; counted: number }>`
          SELECT note_count, text_bytes, (
            SELECT sum(octet_length(title) + octet_length(content) + octet_length(content_text))
            FROM notes WHERE user_id = ${id}
          ) AS counted FROM users WHERE id = ${id}`.execute(notes.db);
        assert.deepEqual(
          { notes: Number(rows[0]?.note_count), bytes: Number(rows[0]?.text_bytes) },
          { notes: 3, bytes: Number(rows[0]?.counted) },
        );
        assert.equal(Number(rows[0]?.counted), 3 * ("shared keep".length + 2));
      }
    });

    if (engine === "postgres") {
      it("commits a user's concurrent creates together, not one transaction each", async () => {
        const cy = await notes.person();
        const answers = await Promise.all(
          Array.from({ length: CONCURRENT }, (_, n) =>
            cy.call("POST", "/api/notes", { title: `together ${n}` }),
          ),
        );
        assert.ok(answers.every((answer) => answer.status === 201));
        // A row's xmin is the transaction that wrote it.
        const { rows } = await sql<{ transactions: number }>`
          SELECT count(DISTINCT xmin::text)::int AS transactions FROM notes
          WHERE user_id = ${await userIdOf(cy)}`.execute(notes.db);
        const transactions = rows[0]?.transactions ?? CONCURRENT;
        assert.ok(transactions <= CONCURRENT / 4, `${transactions} transactions`);
      });
    }
  });
}

describe("batchesByKey", () => {
  const limits: BatchLimits<number> = { maxItems: 4, maxSize: 10, sizeOf: (item) => item };

  it("answers every item with its own outcome, in order, each key's batches one at a time and within the limits", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom("a", "b", "c"), fc.integer({ min: 1, max: 12 })), {
          maxLength: 40,
        }),
        async (items) => {
          const running = new Set<string>();
          const batches: { key: string; items: number[] }[] = [];
          const add = batchesByKey(async (key, batch: number[]) => {
            assert.ok(!running.has(key), `two batches of ${key} at once`);
            running.add(key);
            batches.push({ key, items: batch });
            await new Promise((resolve) => setImmediate(resolve));
            running.delete(key);
            // Odd items are refused, each with its own error.
            return batch.map(
              (item): Outcome<string> =>
                item % 2 === 0
                  ? { ok: true, value: `${key}${item}` }
                  : { ok: false, error: new Error(`${key}${item}`) },
            );
          }, limits);
          const settled = await Promise.allSettled(items.map(([key, item]) => add(key, item)));
          for (const [index, [key, item]] of items.entries()) {
            const outcome = settled[index];
            if (item % 2 === 0)
              assert.deepEqual(outcome, { status: "fulfilled", value: `${key}${item}` });
            else assert.equal((outcome as PromiseRejectedResult).reason.message, `${key}${item}`);
          }
          for (const key of ["a", "b", "c"]) {
            const written = batches.filter((batch) => batch.key === key).flatMap((b) => b.items);
            const asked = items.filter(([k]) => k === key).map(([, item]) => item);
            assert.deepEqual(written, asked);
          }
          for (const { items: batch } of batches) {
            assert.ok(batch.length >= 1 && batch.length <= limits.maxItems);
            const size = batch.reduce((sum, item) => sum + item, 0);
            assert.ok(batch.length === 1 || size <= limits.maxSize, `batch ${batch} over the size`);
          }
        },
      ),
      { numRuns: Number(process.env.PROPERTY_RUNS ?? 200) },
    );
  });

  it("takes the items asked for in one turn together", async () => {
    const batches: number[][] = [];
    const add = batchesByKey(
      async (_key, batch: number[]) => {
        batches.push(batch);
        return batch.map((item): Outcome<number> => ({ ok: true, value: item }));
      },
      { maxItems: 64, maxSize: 1000, sizeOf: () => 1 },
    );
    assert.deepEqual(await Promise.all([1, 2, 3].map((item) => add("k", item))), [1, 2, 3]);
    assert.deepEqual(batches, [[1, 2, 3]]);
  });

  it("gives every item of a batch the error its write threw, and goes on with the next batch", async () => {
    let calls = 0;
    const add = batchesByKey(
      async (_key, batch: string[]) => {
        calls++;
        if (calls === 1) throw new Error("database unavailable");
        return batch.map((item): Outcome<string> => ({ ok: true, value: item }));
      },
      { maxItems: 64, maxSize: 1000, sizeOf: () => 1 },
    );
    const first = await Promise.allSettled([add("k", "x"), add("k", "y")]);
    assert.deepEqual(
      first.map((outcome) => (outcome as PromiseRejectedResult).reason.message),
      ["database unavailable", "database unavailable"],
    );
    assert.equal(await add("k", "z"), "z");
  });
});
