import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { openTestNotes, type Person, type TestNotes } from "./support/harness.ts";

for (const engine of testEngines()) {
  describe(`notes API: one user never reaches another's data (${engine})`, () => {
    let notes: TestNotes;
    let owner: Person;
    let intruder: Person;
    let noteId: string;
    let tagId: string;

    before(async () => {
      notes = await openTestNotes(engine);
      owner = await notes.person();
      intruder = await notes.person();
      const tag = await owner.call("POST", "/api/tags", { name: "secret" });
      tagId = ((await tag.json()) as { tag: { id: string } }).tag.id;
      const note = await owner.call("POST", "/api/notes", {
        title: "Owner's secret plan",
        contentText: "classified",
        tagIds: [tagId],
      });
      noteId = ((await note.json()) as { note: { id: string } }).note.id;
      await intruder.call("POST", "/api/notes", { title: "Intruder's own note" });
    });
    after(() => notes.close());

    const snapshot = async () => (await owner.call("GET", `/api/notes/${noteId}`)).json();

    it("cannot read, change or delete the note by id: 404 Note not found each time", async () => {
      const before = await snapshot();
      for (const [method, body] of [
        ["GET"],
        ["PATCH", { title: "pwned", tagIds: [] }],
        ["DELETE"],
      ] as const) {
        const response = await intruder.call(method, `/api/notes/${noteId}`, body);
        assert.equal(response.status, 404, method);
        assert.deepEqual(await response.json(), {
          error: "Note not found",
          code: "note_not_found",
        });
      }
      assert.deepEqual(await snapshot(), before, "the owner's note is untouched");
    });

    it("cannot see or count it through list, search, tagId or paging", async () => {
      for (const query of [
        "",
        "?search=secret",
        "?search=classified",
        `?tagId=${tagId}`,
        "?limit=500&offset=0",
      ]) {
        const response = await intruder.call("GET", `/api/notes${query}`);
        const page = (await response.json()) as { notes: { title: string }[]; total: number };
        assert.ok(
          page.notes.every((note) => note.title === "Intruder's own note"),
          query,
        );
        assert.equal(
          page.total,
          query.includes("tagId") || query.includes("search") ? 0 : 1,
          query,
        );
      }
    });

    it("cannot see, rename, delete or assign the other's tags", async () => {
      const tags = (await (await intruder.call("GET", "/api/tags")).json()) as { tags: unknown[] };
      assert.deepEqual(tags.tags, []);
      assert.equal(
        (await intruder.call("PATCH", `/api/tags/${tagId}`, { name: "mine" })).status,
        404,
      );
      assert.equal((await intruder.call("DELETE", `/api/tags/${tagId}`)).status, 404);
      const created = await intruder.call("POST", "/api/notes", {
        title: "Steal tag",
        tagIds: [tagId],
      });
      const { note } = (await created.json()) as { note: { id: string; tags: unknown[] } };
      assert.deepEqual(note.tags, [], "another user's tag is ignored");
      const patched = await intruder.call("PATCH", `/api/notes/${note.id}`, { tagIds: [tagId] });
      assert.deepEqual(((await patched.json()) as { note: { tags: unknown[] } }).note.tags, []);
      const owners = (await (await owner.call("GET", "/api/tags")).json()) as {
        tags: { name: string }[];
      };
      assert.deepEqual(
        owners.tags.map((t) => t.name),
        ["secret"],
      );
    });

    it("may use a tag name the other user already has", async () => {
      assert.equal((await intruder.call("POST", "/api/tags", { name: "SECRET" })).status, 201);
    });
  });
}
