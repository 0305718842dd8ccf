import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { testEngines } from "@agentpass/db/testing";
import { ERRORS } from "../src/errors.ts";
import { VERIFY_CACHE_MS } from "../src/service.ts";
import { AUTHENTICATED_ENDPOINTS } from "./support/endpoints.ts";
import { openTestNotes, type TestNotes } from "./support/harness.ts";

const ENDPOINTS = AUTHENTICATED_ENDPOINTS;
/** The refusal of a good token whose email has no notes account: it says which is missing. */
const NO_ACCOUNT = "No notes account for this email (the token is valid)";

const BIN = fileURLToPath(new URL("../src/bin.ts", import.meta.url));

/** Runs the notes admin CLI, another process, against `notes`'s database. */
function adminCli(notes: TestNotes, ...args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const env = {
      PATH: process.env.PATH,
      DATA_DIR: notes.database.dataDir,
      DATABASE_URL: notes.database.databaseUrl ?? "",
    };
    execFile(process.execPath, [BIN, ...args], { env }, (error, _stdout, stderr) =>
      error ? reject(new Error(`${args.join(" ")}: ${stderr}`)) : resolve(),
    );
  });
}

/** A refusal: its status, its message, and the code the error table gives it. */
async function expectAnswer(response: Response, status: number, error: string) {
  assert.equal(response.status, status);
  const refusal = Object.values(ERRORS).find((def) => def.message === error);
  assert.ok(refusal, `"${error}" is in the error table`);
  assert.deepEqual(await response.json(), { error, code: refusal.code });
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

    it("answers 401 saying the account is missing, not the token, when the email has no notes account", async () => {
      const stranger = await notes.person(`stranger-${crypto.randomUUID()}@example.com`, false);
      for (const [method, path] of ENDPOINTS) {
        await expectAnswer(await stranger.call(method, path), 401, NO_ACCOUNT);
      }
    });

    it("sees a user added or removed by the admin CLI (another process) on the very next request", async () => {
      // Users are cached on SQLite; every request first waits for a check of the database
      // made after it arrived, so a change committed by another process is never missed.
      const email = `newcomer-${crypto.randomUUID()}@example.com`;
      const person = await notes.person(email, false);
      await expectAnswer(await person.call("GET", "/api/notes"), 401, NO_ACCOUNT);
      await adminCli(notes, "users", "add", email);
      assert.equal((await person.call("GET", "/api/notes")).status, 200);
      assert.equal((await person.call("GET", "/api/tags")).status, 200);
      await adminCli(notes, "users", "remove", email, "--yes");
      await expectAnswer(await person.call("GET", "/api/notes"), 401, NO_ACCOUNT);
      await adminCli(notes, "users", "add", email);
      const created = await person.call("POST", "/api/notes", { title: "back again" });
      assert.equal(created.status, 201, await created.clone().text());
    });

    it("matches the local account on the canonical email", async () => {
      await notes.store.addUser("mixed.case@example.com", notes.now());
      const { key } = await notes.identity.createUserKey("Mixed.Case@EXAMPLE.com");
      const token = await notes.mint(key);
      assert.equal((await notes.call(token, "GET", "/api/notes")).status, 200);
    });

    it("names both credentials in every 401's WWW-Authenticate, and takes the token as Bearer too", async () => {
      const person = await notes.person();
      const challenges = [
        await notes.call(null, "GET", "/api/notes"),
        await notes.call("aps_forged", "GET", "/api/tags"),
        await (await notes.person(undefined, false)).call("GET", "/api/notes"),
      ];
      for (const answer of challenges) {
        assert.equal(answer.status, 401);
        // RFC 6750's challenge first (resource-server.test.ts), then the x-session-token one,
        // then the Agent Auth Protocol's (section 5.14): where an agent registers its own key.
        assert.match(
          answer.headers.get("www-authenticate") ?? "",
          /^Bearer resource_metadata="[^"]+".*, AgentPass-Session header="x-session-token", AgentAuth discovery="http:\/\/[^"]+\/\.well-known\/agent-configuration"$/,
        );
      }
      const bearer = await notes.app.request("/api/notes", {
        headers: { authorization: `Bearer ${person.token}` },
      });
      assert.equal(bearer.status, 200);
    });

    it("stops serving a revoked user key within 5 s of the revocation", async () => {
      const person = await notes.person();
      assert.equal((await person.call("GET", "/api/notes")).status, 200);
      await notes.identity.revokeUserKey(person.keyId);
      notes.advance(4_999);
      assert.equal((await person.call("GET", "/api/notes")).status, 200, "cached for up to 5 s");
      notes.advance(1);
      await expectAnswer(
        await person.call("DELETE", `/api/notes/${crypto.randomUUID()}`),
        401,
        "Invalid or expired session token",
      );
    });

    it("answers 503 with Retry-After, never 401, when AgentPass refuses the notes API's own key", async () => {
      const person = await notes.person();
      await notes.identity.revokePartnerKey(notes.partner.keyId);
      notes.advance(VERIFY_CACHE_MS); // past the verification cache
      const response = await person.call("GET", "/api/notes");
      assert.equal(response.status, 503);
      assert.equal(response.headers.get("retry-after"), "5");
      assert.deepEqual(await response.json(), {
        error: "Identity service unavailable",
        code: "identity_unavailable",
      });
    });
  });
}

describe("notes API when AgentPass is down", () => {
  it("serves a token verified just before the outage for 5 s at most", async () => {
    const notes = await openTestNotes("sqlite");
    const person = await notes.person();
    assert.equal((await person.call("GET", "/api/notes")).status, 200);
    await notes.identity.close();
    try {
      notes.advance(4_999);
      assert.equal((await person.call("GET", "/api/notes")).status, 200, "from the cache");
      notes.advance(1);
      const response = await person.call("GET", "/api/notes");
      assert.equal(response.status, 503);
      assert.deepEqual(await response.json(), {
        error: "Identity service unavailable",
        code: "identity_unavailable",
      });
    } finally {
      await notes.close().catch(() => {});
    }
  });

  it("answers 503 Identity service unavailable, never letting the request through", async () => {
    const notes = await openTestNotes("sqlite");
    const person = await notes.person();
    await notes.identity.close(); // the identity service stops listening
    try {
      const response = await person.call("GET", "/api/notes");
      assert.equal(response.status, 503);
      assert.equal(response.headers.get("retry-after"), "5");
      assert.deepEqual(await response.json(), {
        error: "Identity service unavailable",
        code: "identity_unavailable",
      });
    } finally {
      await notes.close().catch(() => {});
    }
  });
});
