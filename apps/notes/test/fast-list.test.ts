import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { openTestNotes, type Person, type TestNotes } from "./support/harness.ts";

// Headers of the connection, not of the answer.
const TRANSPORT = new Set(["date", "connection", "keep-alive", "content-length"]);
/** What the test server answers when the fast path passes a request on. */
const PASSED_ON = 599;

async function describeAnswer(response: Response) {
  const headers = [...response.headers]
    .filter(([name]) => !TRANSPORT.has(name))
    .sort(([a], [b]) => a.localeCompare(b));
  return { status: response.status, headers, body: await response.text() };
}

for (const engine of testEngines()) {
  describe(`GET /api/notes through the node:http fast path (${engine})`, () => {
    let notes: TestNotes;
    let server: Server;
    let url: string;
    let ada: Person;
    let stranger: Person;
    let empty: Person;
    let hostile: Person;
    let tagId: string;
    let oddNoteId: string;

    before(async () => {
      notes = await openTestNotes(engine);
      // The fast path alone: whatever it passes on is answered 599, so a test sees which it took.
      server = createServer((request, response) => {
        if (!notes.service.fastPath(request, response)) {
          response.writeHead(PASSED_ON).end();
        }
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      ada = await notes.person();
      stranger = await notes.person(undefined, false);
      empty = await notes.person();
      // Strings JSON escapes, and a document whose text parsing and serializing must keep.
      hostile = await notes.person();
      const odd = '\u0001\u001f\u007f"\\</script>\u2028\u2029\ud83d\ude00é\n\t ';
      const oddTag = (await (
        await hostile.call("POST", "/api/tags", { name: `x${odd}y` })
      ).json()) as {
        tag: { id: string };
      };
      const written = await hostile.call("POST", "/api/notes", {
        title: `t${odd}t`,
        content: JSON.parse('{"b2":{"x":1},"10":true,"b":[1e21,-0,0.1,"\\u2028\\"é"]}'),
        contentText: odd,
        tagIds: [oddTag.tag.id],
      });
      oddNoteId = ((await written.json()) as { note: { id: string } }).note.id;
      // Updated field by field: the stored listing follows each write (notes migration 0006).
      for (const patch of [
        { content: JSON.parse(`{"__proto__":{"y":"${"\\u0000"}"},"z":[-0,1e-7]}`) },
        { contentText: `${odd}${odd}` },
        { title: `u${odd}u` },
      ]) {
        notes.advance(1000);
        await hostile.call("PATCH", `/api/notes/${oddNoteId}`, patch);
      }
      await hostile.call("POST", "/api/notes", { title: "second", content: null });
      const tag = (await (await ada.call("POST", "/api/tags", { name: "Work" })).json()) as {
        tag: { id: string };
      };
      tagId = tag.tag.id;
      for (let n = 0; n < 5; n++) {
        notes.advance(1000);
        await ada.call("POST", "/api/notes", {
          title: `Note ${n} ✓ "quoted" \\ <b>`,
          content: [{ type: "paragraph", text: `body ${n}` }],
          contentText: `body ${n}`,
          tagIds: n % 2 ? [tag.tag.id] : [],
        });
      }
    });
    after(async () => {
      await new Promise((resolve) => server.close(resolve));
      await notes.close();
    });

    const compare = async (path: string, token: string | null) => {
      const headers: Record<string, string> = {};
      if (token !== null) headers["x-session-token"] = token;
      const fast = await describeAnswer(await fetch(`${url}${path}`, { headers }));
      const hono = await describeAnswer(await notes.call(token, "GET", path));
      return { fast, hono };
    };

    it("answers the plain list with the same status, headers and body as the Hono route", async () => {
      const paths = [
        "/api/notes",
        "/api/notes?limit=2",
        "/api/notes?offset=1",
        "/api/notes?limit=2&offset=3",
        "/api/notes?offset=3&limit=2",
        "/api/notes?limit=500",
        "/api/notes?limit=020",
        "/api/notes?offset=99",
        "/api/notes?limit=0",
        "/api/notes?limit=501",
        "/api/notes?offset=9999999999999999",
      ];
      for (const path of paths) {
        const tokens = [ada.token, empty.token, hostile.token, stranger.token, "aps_not-a-token"];
        for (const token of [...tokens, "", null]) {
          const { fast, hono } = await compare(path, token);
          assert.notEqual(fast.status, PASSED_ON, `${path} should be answered on the fast path`);
          assert.deepEqual(fast, hono, `${path} with ${token?.slice(0, 8) ?? "no token"}`);
        }
      }
      const { fast } = await compare("/api/notes?limit=2", ada.token);
      const page = JSON.parse(fast.body) as { notes: { tags: unknown[] }[]; total: number };
      assert.equal(page.total, 5);
      assert.equal(page.notes.length, 2);
      const none = JSON.parse((await compare("/api/notes", empty.token)).fast.body);
      assert.deepEqual(none, { notes: [], total: 0 });
      assert.equal(page.notes[0]?.tags.length, 0);
      assert.equal(page.notes[1]?.tags.length, 1);
      const odd = JSON.parse((await compare("/api/notes", hostile.token)).fast.body) as {
        notes: { id: string; title: string; content: object; tags: unknown[] }[];
      };
      const patched = odd.notes.find((note) => note.id === oddNoteId);
      assert.equal(patched?.title.slice(0, 4), "u\u0001\u001f\u007f");
      assert.deepEqual(Object.keys(patched?.content ?? {}), ["__proto__", "z"]);
      assert.equal(patched?.tags.length, 1);
    });

    it("answers searches and tag filters with the same status, headers and body as the Hono route", async () => {
      const paths = [
        "/api/notes?search=body",
        "/api/notes?search=BODY&limit=2",
        "/api/notes?limit=2&offset=1&search=bod",
        "/api/notes?search=body&offset=4",
        "/api/notes?search=body&offset=9",
        "/api/notes?search=No",
        "/api/notes?search=e_d",
        "/api/notes?search=quoted.",
        "/api/notes?search=nothing-like-it",
        `/api/notes?tagId=${tagId}`,
        `/api/notes?tagId=${tagId.toUpperCase()}&search=body&limit=1`,
        `/api/notes?tagId=${crypto.randomUUID()}`,
        "/api/notes?tagId=x",
        "/api/notes?search=body&limit=0",
        `/api/notes?search=${"a".repeat(1000)}`,
      ];
      for (const path of paths) {
        for (const token of [ada.token, empty.token, stranger.token, "aps_not-a-token", null]) {
          const { fast, hono } = await compare(path, token);
          assert.notEqual(fast.status, PASSED_ON, `${path} should be answered on the fast path`);
          assert.deepEqual(fast, hono, `${path} with ${token?.slice(0, 8) ?? "no token"}`);
        }
      }
      const found = async (path: string) =>
        JSON.parse((await compare(path, ada.token)).fast.body) as { total: number };
      assert.equal((await found("/api/notes?search=BODY&limit=2")).total, 5);
      assert.equal((await found(`/api/notes?tagId=${tagId}`)).total, 2);
      assert.equal((await found(`/api/notes?tagId=${tagId}&search=body&limit=1`)).total, 2);
      assert.equal((await compare("/api/notes?tagId=x", ada.token)).fast.status, 400);
    });

    it("passes every other request on to Hono", async () => {
      const others = [
        "/api/notes/",
        "/api/notes?search=body+1",
        "/api/notes?search=body%201",
        "/api/notes?search=b%C3%B6dy",
        "/api/notes?search=body&search=x",
        `/api/notes?search=${"a".repeat(1001)}`,
        "/api/notes?limit=1&limit=2",
        "/api/notes?limit=%32",
        "/api/notes?limit=",
        "/api/notes?search",
        "/api/notes?limit=1&",
        "/api/notes?x=1",
        "/api/notesx",
        "/api/tags",
        `/api/notes/${crypto.randomUUID()}`,
      ];
      for (const path of others) {
        const response = await fetch(`${url}${path}`, {
          headers: { "x-session-token": ada.token },
        });
        assert.equal(response.status, PASSED_ON, path);
      }
      const post = await fetch(`${url}/api/notes`, { method: "POST", body: "{}" });
      assert.equal(post.status, PASSED_ON);
    });
  });
}
