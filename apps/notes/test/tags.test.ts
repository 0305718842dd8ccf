import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { openTestNotes, type Person, type TestNotes } from "./support/harness.ts";

type TagJson = { id: string; name: string; createdAt: string };

for (const engine of testEngines()) {
  describe(`notes API: tags (${engine})`, () => {
    let notes: TestNotes;
    let ada: Person;

    before(async () => {
      notes = await openTestNotes(engine);
      ada = await notes.person();
    });
    after(() => notes.close());

    const tag = async (name: string) => {
      const response = await ada.call("POST", "/api/tags", { name });
      assert.equal(response.status, 201, await response.clone().text());
      return ((await response.json()) as { tag: TagJson }).tag;
    };

    it("creates tags (201 { tag }) and lists them by name", async () => {
      const zebra = await tag("  zebra ");
      assert.deepEqual(zebra, {
        id: zebra.id,
        name: "zebra",
        createdAt: new Date(notes.now()).toISOString(),
      });
      await tag("Apple");
      await tag("mango");
      const response = await ada.call("GET", "/api/tags");
      const { tags } = (await response.json()) as { tags: TagJson[] };
      assert.deepEqual(
        tags.map((t) => t.name),
        ["Apple", "mango", "zebra"],
      );
    });

    it("keeps names unique per user ignoring case: 409 Tag already exists", async () => {
      await tag("Unique");
      const again = await ada.call("POST", "/api/tags", { name: "UNIQUE" });
      assert.equal(again.status, 409);
      assert.deepEqual(await again.json(), { error: "Tag already exists", code: "tag_exists" });
      const other = await notes.person();
      assert.equal((await other.call("POST", "/api/tags", { name: "unique" })).status, 201);
    });

    it("validates names: 1 to 100 characters after trimming", async () => {
      for (const name of ["", "   ", "x".repeat(101), 5, null, "a\u0000b"]) {
        const response = await ada.call("POST", "/api/tags", { name });
        assert.equal(response.status, 400);
        const body = (await response.json()) as {
          error: string;
          details: { fieldErrors: Record<string, unknown> };
        };
        assert.equal(body.error, "Invalid request body");
        assert.ok(body.details.fieldErrors.name);
      }
      const malformed = await ada.call("POST", "/api/tags", undefined, "nope");
      assert.deepEqual(await malformed.json(), {
        error: "Request body must be valid JSON",
        code: "invalid_json_body",
      });
      assert.equal((await tag("x".repeat(100))).name.length, 100);
    });

    it("renames a tag, refusing a clash with another of the same user", async () => {
      const first = await tag("first");
      await tag("second");
      const renamed = await ada.call("PATCH", `/api/tags/${first.id}`, { name: "First!" });
      assert.equal(renamed.status, 200);
      assert.equal(((await renamed.json()) as { tag: TagJson }).tag.name, "First!");
      const sameKey = await ada.call("PATCH", `/api/tags/${first.id}`, { name: "FIRST!" });
      assert.equal(sameKey.status, 200, "a tag may change the case of its own name");
      const clash = await ada.call("PATCH", `/api/tags/${first.id}`, { name: "SECOND" });
      assert.equal(clash.status, 409);
      assert.equal(
        (await ada.call("PATCH", `/api/tags/${crypto.randomUUID()}`, { name: "x" })).status,
        404,
      );
      const bad = await ada.call("PATCH", "/api/tags/nope", { name: "x" });
      assert.deepEqual(await bad.json(), { error: "Invalid tag id", code: "invalid_tag_id" });
    });

    it("assigns owned tags to notes, filters by tagId, and PATCH tagIds replaces the set", async () => {
      const red = await tag("red");
      const blue = await tag("blue");
      const created = await ada.call("POST", "/api/notes", {
        title: "Tagged",
        tagIds: [red.id, blue.id, red.id],
      });
      const { note } = (await created.json()) as {
        note: { id: string; tags: TagJson[]; updatedAt: string };
      };
      assert.deepEqual(
        note.tags.map((t) => t.name),
        ["blue", "red"],
      );
      await ada.call("POST", "/api/notes", { title: "Untagged" });
      const filtered = (await (await ada.call("GET", `/api/notes?tagId=${red.id}`)).json()) as {
        notes: { id: string }[];
        total: number;
      };
      assert.deepEqual(
        filtered.notes.map((n) => n.id),
        [note.id],
      );
      assert.equal(filtered.total, 1);
      const patched = await ada.call("PATCH", `/api/notes/${note.id}`, { tagIds: [blue.id] });
      assert.deepEqual(
        ((await patched.json()) as { note: { tags: TagJson[] } }).note.tags.map((t) => t.name),
        ["blue"],
      );
      const unknownTag = (await (
        await ada.call("GET", `/api/notes?tagId=${crypto.randomUUID()}`)
      ).json()) as { total: number };
      assert.equal(unknownTag.total, 0);
    });

    it("DELETE removes the tag from every note (204) without touching updatedAt", async () => {
      const doomed = await tag("doomed");
      const created = await ada.call("POST", "/api/notes", {
        title: "Carrier",
        tagIds: [doomed.id],
      });
      const { note } = (await created.json()) as { note: { id: string; updatedAt: string } };
      notes.advance(1000);
      const response = await ada.call("DELETE", `/api/tags/${doomed.id}`);
      assert.equal(response.status, 204);
      const read = (await (await ada.call("GET", `/api/notes/${note.id}`)).json()) as {
        note: { tags: unknown[]; updatedAt: string };
      };
      assert.deepEqual(read.note.tags, []);
      assert.equal(read.note.updatedAt, note.updatedAt);
      assert.equal((await ada.call("DELETE", `/api/tags/${doomed.id}`)).status, 404);
    });
  });
}
