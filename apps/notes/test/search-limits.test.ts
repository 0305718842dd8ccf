import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { startServer } from "@agentpass/http";
import { sql } from "kysely";
import { loadNotesConfig } from "../src/config.ts";
import { openNotesService } from "../src/service.ts";
import { openTestNotes, type Person, type TestNotes } from "./support/harness.ts";

/** A search's too-many answer: 400 Invalid query parameters, the limit named. */
function tooMuch(problem: string) {
  return {
    status: 400,
    body: {
      error: "Invalid query parameters",
      code: "invalid_query",
      details: { formErrors: [], fieldErrors: { search: [problem] } },
    },
  };
}

const SEARCH_TOOK_TOO_LONG = {
  status: 503,
  retryAfter: "5",
  body: { error: "Search took too long", code: "search_timeout" },
};

async function answerOf(response: Response) {
  return {
    status: response.status,
    ...(response.headers.has("retry-after") && {
      retryAfter: response.headers.get("retry-after"),
    }),
    body: (await response.json()) as Record<string, unknown>,
  };
}

/**
 * Runs `request`, giving its answer and its place among the answers `order` has counted (0 for
 * the first): the tests judge which came first, never how many milliseconds each took, which a
 * busy machine stretches.
 */
async function inOrder(order: { answers: number }, request: Response | Promise<Response>) {
  const answer = await answerOf(await request);
  return { ...answer, place: order.answers++ };
}

const searchPath = (search: string) => `/api/notes?search=${encodeURIComponent(search)}`;

/**
 * A note's text that makes every LIKE of a search scan all of it: all `a`, then `b` at the end
 * (so `ab` and `Ab` match only there, and `ac` nowhere). Just under 1 MiB, the body limit.
 */
const HOSTILE_TEXT = `${"a".repeat(900_000)}b`;
/**
 * A search that passes every limit and still reads all of each hostile note's text: every term
 * matches only where the text ends (`…ab`, ignoring case), three as LIKEs over every byte, the
 * rest each one trigram. Measured, a MB of such text: ~47 ms on SQLite (the LIKEs), ~170 ms on
 * PostgreSQL (each term lowercases and reads the text again); over `HOSTILE_NOTES` notes it takes
 * seconds without a budget.
 */
const HOSTILE_SEARCH = "ab Ab aB aab Aab aAb aaB AAb AAB aAB";
/**
 * Terms FTS5 checks at each of the ~900,000 places of `aaa` in a hostile note (three each), in
 * one step of the statement that nothing can interrupt: ~24 ms a MB a term on SQLite.
 */
const PHRASE_TERM = "aaaaab";
const HOSTILE_NOTES = 40;
/** The budget of a search statement in these tests. */
const BUDGET_MS = 200;

for (const engine of testEngines()) {
  describe(`notes API: what a search may ask (${engine})`, () => {
    let notes: TestNotes;
    let ada: Person;

    before(async () => {
      notes = await openTestNotes(engine);
      ada = await notes.person();
      await ada.call("POST", "/api/notes", { title: "ten terms", contentText: "a b c d" });
    });
    after(() => notes.close());

    const overSocket = async (path: string) =>
      answerOf(await notes.app.request(path, { headers: { "x-session-token": ada.token } }));

    it("answers 400 naming the limit for more than 10 terms, more than 3 under 3 characters, one over 64 characters or one repeating 3 characters more than 3 times (in-process and over a socket), and takes a search at the limits", async () => {
      const cases: [search: string, problem: string][] = [
        ["one two three four five six seven eight nine ten eleven", "must have at most 10 terms"],
        ["a b c d", "must have at most 3 terms shorter than 3 characters"],
        [`ok ${"x".repeat(65)}`, "must have no term longer than 64 characters"],
        ["hahahahaha", "must have no term repeating the same 3 characters more than 3 times"],
      ];
      for (const [search, problem] of cases) {
        assert.deepEqual(
          await answerOf(await ada.call("GET", searchPath(search))),
          tooMuch(problem),
        );
        assert.deepEqual(await overSocket(searchPath(search)), tooMuch(problem), search);
      }
      // A search at every limit is taken: 10 terms, 3 of them short, one of 64 characters, one
      // repeating "hah" and "aha" 3 times each.
      const search = [
        "a",
        "b",
        "c",
        "ten",
        "terms",
        "abcdefghijklmnopqrstuvwxyz0123456789".repeat(2).slice(0, 64),
        "hahahaha",
        "more",
        "long",
        "ones",
      ].join(" ");
      const atLimit = await answerOf(await ada.call("GET", searchPath(search)));
      assert.deepEqual(atLimit, { status: 200, body: { notes: [], total: 0 } });
      const found = await answerOf(await ada.call("GET", searchPath("a b c ten terms")));
      assert.equal(found.body.total, 1);
    });
  });

  describe(`notes API: per-user caps on notes and text (${engine})`, () => {
    const MAX_NOTES = 5;
    const MAX_TEXT_BYTES = 4096;
    let notes: TestNotes;

    before(async () => {
      notes = await openTestNotes(
        engine,
        {},
        { MAX_NOTES_PER_USER: String(MAX_NOTES), MAX_TEXT_BYTES_PER_USER: String(MAX_TEXT_BYTES) },
      );
    });
    after(() => notes.close());

    /** The user's counters as stored, and their notes' bytes added up afresh. */
    async function countersOf(person: Person) {
      const user = await notes.store.findUserByEmail(person.email.toLowerCase());
      assert.ok(user);
      const { rows } = await sql<{ note_count: number; text_bytes: number; counted: number }>`
        SELECT note_count, text_bytes, (
          SELECT coalesce(sum(octet_length(title) + octet_length(content) + octet_length(content_text)), 0)
          FROM notes WHERE user_id = ${user.id}
        ) AS counted FROM users WHERE id = ${user.id}`.execute(notes.db);
      const [row] = rows;
      assert.ok(row);
      return {
        notes: Number(row.note_count),
        textBytes: Number(row.text_bytes),
        counted: Number(row.counted),
      };
    }

    it(`refuses a create past ${MAX_NOTES} notes with 409 Note limit reached, and takes one again after a delete`, async () => {
      const bea = await notes.person();
      const ids: string[] = [];
      for (let n = 0; n < MAX_NOTES; n++) {
        const created = await bea.call("POST", "/api/notes", { title: `note ${n}` });
        assert.equal(created.status, 201);
        ids.push(((await created.json()) as { note: { id: string } }).note.id);
      }
      const refused = await answerOf(await bea.call("POST", "/api/notes", { title: "one more" }));
      assert.deepEqual(refused, {
        status: 409,
        body: { error: "Note limit reached (5 notes)", code: "note_limit_reached" },
      });
      const list = await answerOf(await bea.call("GET", "/api/notes"));
      assert.equal(list.body.total, MAX_NOTES);
      assert.equal((await bea.call("DELETE", `/api/notes/${ids[0]}`)).status, 204);
      assert.equal((await bea.call("POST", "/api/notes", { title: "in its place" })).status, 201);
      const counters = await countersOf(bea);
      assert.equal(counters.notes, MAX_NOTES);
      assert.equal(counters.textBytes, counters.counted);
    });

    it(`refuses text past ${MAX_TEXT_BYTES} bytes on a create and on an update that grows a note, not on one that shrinks it`, async () => {
      const cy = await notes.person();
      // title 1 + content 2 ("[]") + 3,000 bytes of text (1,500 two-byte characters).
      const first = await cy.call("POST", "/api/notes", {
        title: "t",
        contentText: "é".repeat(1500),
      });
      assert.equal(first.status, 201);
      const { id } = ((await first.json()) as { note: { id: string } }).note;
      assert.deepEqual((await countersOf(cy)).textBytes, 3003);
      const refusedCreate = await answerOf(
        await cy.call("POST", "/api/notes", { title: "u", contentText: "x".repeat(1100) }),
      );
      assert.deepEqual(refusedCreate, {
        status: 409,
        body: { error: "Text limit reached (4096 bytes)", code: "text_limit_reached" },
      });
      // 1,093 more bytes would fit exactly (4,096); one more does not.
      const grow = (extra: number) =>
        cy.call("PATCH", `/api/notes/${id}`, {
          contentText: `${"é".repeat(1500)}${"x".repeat(extra)}`,
        });
      assert.deepEqual(await answerOf(await grow(1094)), {
        status: 409,
        body: { error: "Text limit reached (4096 bytes)", code: "text_limit_reached" },
      });
      assert.equal((await grow(1093)).status, 200);
      assert.equal((await countersOf(cy)).textBytes, MAX_TEXT_BYTES);
      // A content document counts as stored: one that grows the note is refused as well.
      const content = await cy.call("PATCH", `/api/notes/${id}`, { content: [{ t: "p" }] });
      assert.equal(content.status, 409);
      // At the cap, an edit that keeps or shrinks the note passes.
      assert.equal((await cy.call("PATCH", `/api/notes/${id}`, { title: "T" })).status, 200);
      assert.equal(
        (await cy.call("PATCH", `/api/notes/${id}`, { contentText: "short" })).status,
        200,
      );
      const after = await countersOf(cy);
      assert.equal(after.textBytes, 1 + 2 + 5);
      assert.equal(after.textBytes, after.counted);
      assert.equal((await cy.call("POST", "/api/notes", { title: "fits again" })).status, 201);
    });

    it(`leaves exactly ${MAX_NOTES} notes after 20 concurrent creates`, async () => {
      const dee = await notes.person();
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, n) =>
          dee.call("POST", "/api/notes", { title: `racing ${n}`, contentText: "x".repeat(100) }),
        ),
      );
      const statuses = answers.map((answer) => answer.status).sort((a, b) => a - b);
      assert.deepEqual(statuses, [
        ...Array(MAX_NOTES).fill(201),
        ...Array(20 - MAX_NOTES).fill(409),
      ]);
      const list = await answerOf(await dee.call("GET", "/api/notes"));
      assert.equal((list.body.notes as unknown[]).length, MAX_NOTES);
      assert.equal(list.body.total, MAX_NOTES);
      const counters = await countersOf(dee);
      assert.equal(counters.notes, MAX_NOTES);
      assert.equal(counters.textBytes, counters.counted);
    });

    it("refuses text past the cap among concurrent creates too: the text counter never passes it", async () => {
      const eve = await notes.person();
      // Each note 1,003 bytes: 4 fit in 4,096, and no more, whichever commit first.
      const answers = await Promise.all(
        Array.from({ length: 8 }, () =>
          eve.call("POST", "/api/notes", { title: "t", contentText: "y".repeat(1000) }),
        ),
      );
      assert.equal(answers.filter((answer) => answer.status === 201).length, 4);
      const counters = await countersOf(eve);
      assert.deepEqual(counters, { notes: 4, textBytes: 4012, counted: 4012 });
    });
  });

  describe(`notes API: hostile searches are held to their budget (${engine})`, () => {
    let notes: TestNotes;
    let mallory: Person;
    let ada: Person;
    let adaNoteId: string;

    before(async () => {
      notes = await openTestNotes(
        engine,
        {},
        { SEARCH_TIMEOUT_MS: String(BUDGET_MS), READER_THREADS: "2" },
      );
      mallory = await notes.person();
      ada = await notes.person();
      const malloryId = (await notes.store.findUserByEmail(mallory.email.toLowerCase()))?.id;
      assert.ok(malloryId);
      for (let n = 0; n < HOSTILE_NOTES; n++) {
        await notes.store.createNote(
          malloryId,
          { title: `hostile ${n}`, content: [], contentText: HOSTILE_TEXT },
          [],
          notes.now(),
        );
      }
      const created = await ada.call("POST", "/api/notes", {
        title: "Quarterly planning",
        contentText: "budget review",
      });
      adaNoteId = ((await created.json()) as { note: { id: string } }).note.id;
    });
    after(() => notes.close());

    it("answers 503 Search took too long at the budget, while another user's list and search answer 200", {
      timeout: 60_000,
    }, async () => {
      const concurrent = engine === "sqlite" ? 2 : 10;
      const order = { answers: 0 };
      const hostile = Array.from({ length: concurrent }, () =>
        inOrder(order, mallory.call("GET", searchPath(HOSTILE_SEARCH))),
      );
      // The hostile searches hold every reader thread (SQLite) or most of the pool (PostgreSQL).
      await new Promise((resolve) => setTimeout(resolve, 50));
      const [list, search] = await Promise.all([
        inOrder(order, ada.call("GET", "/api/notes")),
        inOrder(order, ada.call("GET", searchPath("plan review"))),
      ]);
      const answered = await Promise.all(hostile);
      for (const { place: _, ...answer } of answered)
        assert.deepEqual(answer, SEARCH_TOOK_TOO_LONG);
      for (const answer of [list, search]) {
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        assert.deepEqual(
          (answer.body.notes as { id: string }[]).map((note) => note.id),
          [adaNoteId],
        );
      }
      // A plain list never waits for searches: it was answered before any hostile search was.
      const firstHostile = Math.min(...answered.map((answer) => answer.place));
      assert.ok(
        list.place < firstHostile,
        `list answered ${list.place}th, a hostile search ${firstHostile}th`,
      );
      // Every thread and connection came back. (Any search of the hostile user reads the text
      // of their notes on PostgreSQL, whose planner knows too little of 41 notes to use the
      // index, and takes longer than this test's budget.)
      for (let round = 0; round < 5; round++) {
        const [own, other] = await Promise.all([
          answerOf(await mallory.call("GET", "/api/notes?limit=1")),
          answerOf(await ada.call("GET", searchPath("plan review"))),
        ]);
        assert.deepEqual([own.status, own.body.total], [200, HOSTILE_NOTES]);
        assert.deepEqual([other.status, other.body.total], [200, 1]);
      }
    });

    it("answers 503 Search took too long past its budget", async () => {
      // A service with a 20 ms budget on the same database: every search of the hostile user
      // reads its text, which takes longer.
      const loaded = loadNotesConfig({
        DATA_DIR: notes.database.dataDir,
        DATABASE_URL: notes.database.databaseUrl,
        SEARCH_TIMEOUT_MS: "20",
      });
      assert.ok(loaded.ok);
      const tight = await openNotesService(loaded.config, {
        clock: notes.now,
        verifier: notes.service.ctx.verifier,
        logger: notes.service.logger,
      });
      const server = await startServer(tight, { port: 0, host: "127.0.0.1" });
      try {
        const answer = await fetch(`${server.url}/api/notes?search=${PHRASE_TERM}`, {
          headers: { "x-session-token": mallory.token },
        });
        assert.deepEqual(await answerOf(answer), SEARCH_TOOK_TOO_LONG);
      } finally {
        await server.close();
      }
    });

    if (engine === "postgres") {
      it("leaves connections to other requests however many searches run: 20 hostile searches at once, and 20 lists meanwhile", {
        timeout: 60_000,
      }, async () => {
        const order = { answers: 0 };
        const many = Array.from({ length: 20 }, () =>
          inOrder(order, mallory.call("GET", searchPath(HOSTILE_SEARCH))),
        );
        await new Promise((resolve) => setTimeout(resolve, 50));
        const lists = await Promise.all(
          Array.from({ length: 20 }, () => inOrder(order, ada.call("GET", "/api/notes"))),
        );
        const searches = await Promise.all(many);
        for (const { place: _, ...answer } of searches)
          assert.deepEqual(answer, SEARCH_TOOK_TOO_LONG);
        for (const list of lists) assert.equal(list.status, 200, JSON.stringify(list.body));
        const lastList = Math.max(...lists.map((list) => list.place));
        const lastSearch = Math.max(...searches.map((search) => search.place));
        assert.ok(
          lastList < lastSearch,
          `last list answered ${lastList}th, last search ${lastSearch}th`,
        );
      });
    }

    if (engine === "sqlite") {
      it("answers 503 at the budget a search whose full-text work cannot be interrupted, and serves on", {
        timeout: 60_000,
      }, async () => {
        // Three phrases FTS5 checks at every place in every note, inside one step of the
        // statement where nothing can stop it (seconds): the pool gives up on the thread at the
        // budget and serves on with a fresh one.
        const phrases = [PHRASE_TERM, PHRASE_TERM.toUpperCase(), "aaaaaB"].join(" ");
        // That the pool gives up at the deadline, before the statement ends, is proven in
        // packages/db/test/reader-pool.test.ts by the order of events; here, that a search is
        // answered 503 and the service serves on meanwhile.
        const stuck = Promise.resolve(mallory.call("GET", searchPath(phrases))).then(answerOf);
        await new Promise((resolve) => setTimeout(resolve, 50));
        const search = await answerOf(await ada.call("GET", searchPath("plan review")));
        assert.deepEqual(await stuck, SEARCH_TOOK_TOO_LONG);
        assert.equal(search.status, 200);
        assert.equal(search.body.total, 1);
      });

      it("holds a search to its budget on the service's own thread too (READER_THREADS=0)", async () => {
        const loaded = loadNotesConfig({
          DATA_DIR: notes.database.dataDir,
          READER_THREADS: "0",
          SEARCH_TIMEOUT_MS: String(BUDGET_MS),
        });
        assert.ok(loaded.ok);
        const single = await openNotesService(loaded.config, {
          clock: notes.now,
          verifier: notes.service.ctx.verifier,
          logger: notes.service.logger,
        });
        try {
          const call = (search: string) =>
            single.request(`${searchPath(search)}&limit=1`, {
              headers: { "x-session-token": mallory.token },
            });
          // Run to its end it would answer 200: the 503 is the proof it was stopped.
          assert.deepEqual(await answerOf(await call(HOSTILE_SEARCH)), SEARCH_TOOK_TOO_LONG);
          const ordinary = await answerOf(await call("hostile"));
          assert.deepEqual([ordinary.status, ordinary.body.total], [200, HOSTILE_NOTES]);
        } finally {
          await single.close();
        }
      });
    }
  });
}
