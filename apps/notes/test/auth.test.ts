import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { openTestNotes, type TestNotes } from "./support/harness.ts";

const ENDPOINTS: [string, string][] = [
  ["GET", "/api/notes"],
  ["POST", "/api/notes"],
  ["GET", `/api/notes/${crypto.randomUUID()}`],
  ["PATCH", `/api/notes/${crypto.randomUUID()}`],
  ["DELETE", `/api/notes/${crypto.randomUUID()}`],
  ["GET", "/api/tags"],
  ["POST", "/api/tags"],
  ["PATCH", `/api/tags/${crypto.randomUUID()}`],
  ["DELETE", `/api/tags/${crypto.randomUUID()}`],
  ["GET", "/api/notes/not-a-uuid"],
];

async function expectAnswer(response: Response, status: number, error: string) {
  assert.equal(response.status, status);
  assert.deepEqual(await response.json(), { error });
}

for (const engine of testEngines()) {
  describe(`notes API: authentication through AgentPass (${engine})`, () => {
    let notes: TestNotes;

    before(async () => {
      notes = await openTestNotes(engine);
    });
    after(() => notes.close());

    it("answers 401 Missing session token on every endpoint without a token", async () => {
      for (const [method, path] of ENDPOINTS) {
        const body =
          method === "GET" || method === "DELETE" ? undefined : { title: "t", name: "n" };
        await expectAnswer(
          await notes.call(null, method, path, body),
          401,
          "Missing session token",
        );
        await expectAnswer(await notes.call("", method, path), 401, "Missing session token");
      }
    });

    it("answers 401 Invalid or expired session token for a token AgentPass refuses", async () => {
      for (const [method, path] of ENDPOINTS) {
        await expectAnswer(
          await notes.call("aps_forged", method, path),
          401,
          "Invalid or expired session token",
        );
      }
    });

    it("answers 401 once the token is 5 minutes old, and a fresh token works again", async () => {
      const person = await notes.person();
      assert.equal((await person.call("GET", "/api/notes")).status, 200);
      notes.advance(299_000);
      assert.equal((await person.call("GET", "/api/notes")).status, 200);
      notes.advance(1_000);
      await expectAnswer(
        await person.call("GET", "/api/notes"),
        401,
        "Invalid or expired session token",
      );
      const fresh = await notes.mint(person.key);
      assert.equal((await notes.call(fresh, "GET", "/api/notes")).status, 200);
    });

    it("answers 401 No account for this user when the email has no notes account", async () => {
      const stranger = await notes.person(`stranger-${crypto.randomUUID()}@example.com`, false);
      for (const [method, path] of ENDPOINTS) {
        await expectAnswer(await stranger.call(method, path), 401, "No account for this user");
      }
    });

    it("matches the local account on the canonical email", async () => {
      await notes.store.addUser("mixed.case@example.com", notes.now());
      const { key } = await notes.identity.createUserKey("Mixed.Case@EXAMPLE.com");
      const token = await notes.mint(key);
      assert.equal((await notes.call(token, "GET", "/api/notes")).status, 200);
    });

    it("answers 503 with Retry-After, never 401, when AgentPass refuses the notes API's own key", async () => {
      const person = await notes.person();
      await notes.identity.revokePartnerKey(notes.partner.keyId);
      notes.advance(30_000); // past the verification cache
      const response = await person.call("GET", "/api/notes");
      assert.equal(response.status, 503);
      assert.equal(response.headers.get("retry-after"), "5");
      assert.deepEqual(await response.json(), { error: "Identity service unavailable" });
    });
  });
}

describe("notes API when AgentPass is down", () => {
  it("answers 503 Identity service unavailable, never letting the request through", async () => {
    const notes = await openTestNotes("sqlite");
    const person = await notes.person();
    await notes.identity.close(); // the identity service stops listening
    try {
      const response = await person.call("GET", "/api/notes");
      assert.equal(response.status, 503);
      assert.equal(response.headers.get("retry-after"), "5");
      assert.deepEqual(await response.json(), { error: "Identity service unavailable" });
    } finally {
      await notes.close().catch(() => {});
    }
  });
});
