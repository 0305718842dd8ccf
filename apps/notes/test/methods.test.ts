import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { openTestNotes, type TestNotes } from "./support/harness.ts";

for (const engine of testEngines()) {
  describe(`notes API: a known path asked with another method (${engine})`, () => {
    let notes: TestNotes;
    before(async () => {
      notes = await openTestNotes(engine);
    });
    after(() => notes.close());

    it("answers 405 with the methods it takes in Allow", async () => {
      const person = await notes.person();
      const index = await notes.call(null, "POST", "/api");
      assert.equal(index.status, 405);
      assert.equal(index.headers.get("allow"), "GET, HEAD, OPTIONS");
      assert.deepEqual(await index.json(), {
        error: "Method not allowed",
        code: "method_not_allowed",
      });
      const note = await person.call("PUT", `/api/notes/${crypto.randomUUID()}`, { title: "x" });
      assert.equal(note.status, 405);
      assert.equal(note.headers.get("allow"), "DELETE, GET, HEAD, OPTIONS, PATCH");
      assert.equal((await notes.call(null, "GET", "/nowhere")).status, 404);
    });
  });
}
