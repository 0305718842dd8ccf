import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { testEngines } from "@agentpass/db/testing";
import { issueKey } from "../src/domain/credentials.ts";
import { startWebSession } from "../src/domain/web-sessions.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

/** kill -9 rounds: 10 by default (npm run test:all, CI), 3 in npm test, 50 in npm run test:stress. */
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 10);
const KEYS_PER_ROUND = 12;
const BIN = fileURLToPath(new URL("../src/bin.ts", import.meta.url));

for (const engine of testEngines()) {
  describe(`identity service killed with SIGKILL while keys are revoked (${engine})`, () => {
    // The seeding side: the same database, opened in this process (another instance).
    let seeder: TestIdentity;
    let accountId: string;
    let cookie: string;
    let partnerKey: string;
    let running: ChildProcess | undefined;

    before(async () => {
      seeder = await openTestIdentity(engine, {}, { realClock: true });
      accountId = (await seeder.account("crash@example.com")).id;
      const session = await startWebSession(seeder.ctx, accountId);
      const browser = randomBytes(32).toString("base64url");
      cookie = `agentpass_browser=${browser}; agentpass_session=${session}`;
      partnerKey = (await seeder.partner()).key;
    });
    after(async () => {
      running?.kill("SIGKILL");
      await seeder.close();
    });

    function startIdentity(): Promise<{ child: ChildProcess; url: string }> {
      const child = spawn(process.execPath, [BIN, "serve"], {
        env: {
          PATH: process.env.PATH ?? "",
          ...seeder.env,
          PORT: "0",
          HOST: "127.0.0.1",
          LOG_LEVEL: "info",
          // Each round re-checks every earlier revocation (a mint with the key, a verify of its
          // token): far past a client's and a partner's budget for failures.
          BAD_KEYS_PER_MINUTE: "1000000",
          FAILED_VERIFIES_PER_MINUTE: "1000000",
        },
        stdio: ["ignore", "pipe", "ignore"],
      });
      running = child;
      let output = "";
      return new Promise((resolve, reject) => {
        child.stdout?.on("data", (chunk) => {
          output += chunk;
          const url = /"url":"(http:\/\/[^"]+)"/.exec(output)?.[1];
          if (url) resolve({ child, url });
        });
        child.once("exit", (code) => reject(new Error(`identity exited ${code}: ${output}`)));
      });
    }

    async function mint(url: string, key: string) {
      const response = await fetch(`${url}/api/session-tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
      });
      const body = (await response.json()) as { sessionToken?: string; error?: string };
      return { status: response.status, ...body };
    }

    async function verify(url: string, sessionToken: string) {
      const response = await fetch(`${url}/api/verify`, {
        method: "POST",
        headers: { authorization: `Bearer ${partnerKey}`, "content-type": "application/json" },
        body: JSON.stringify({ sessionToken }),
      });
      return response.status;
    }

    /** Every acknowledged revocation holds: no mint with the key, no verify of its tokens. */
    async function checkRevoked(url: string, revoked: Map<string, string>) {
      for (const [key, token] of revoked) {
        const minted = await mint(url, key);
        assert.deepEqual(
          { status: minted.status, error: minted.error },
          { status: 403, error: "User key has been revoked" },
        );
        assert.equal(await verify(url, token), 401, "a token of a revoked key verifies");
      }
    }

    it(`keeps every acknowledged revocation over ${ROUNDS} rounds of kill -9`, async (t) => {
      const revoked = new Map<string, string>(); // key → a token minted before its revocation
      let attempts = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const { child, url } = await startIdentity();
        const exited = new Promise((resolve) => child.once("exit", resolve));
        // What earlier rounds acknowledged holds after their kill.
        await checkRevoked(url, revoked);

        const keys: { id: string; key: string; token: string }[] = [];
        for (let i = 0; i < KEYS_PER_ROUND; i++) {
          const issued = await issueKey(seeder.ctx, "user", accountId, `round ${round} #${i}`);
          if (!issued.ok) throw new Error(issued.code);
          const minted = await mint(url, issued.key);
          assert.equal(minted.status, 201);
          keys.push({
            id: issued.record.id,
            key: issued.key,
            token: minted.sessionToken as string,
          });
        }
        const page = await (await fetch(`${url}/keys`, { headers: { cookie } })).text();
        const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
        assert.ok(csrf, "signed in to the dashboard");

        // The kill lands after a random number of this round's revocations were acknowledged
        // (1 to half of them), never after all: a fixed delay let a fast machine finish every
        // one before it, so nothing was ever cut off.
        const killAfter = 1 + Math.floor(Math.random() * (KEYS_PER_ROUND / 2));
        let acknowledged = 0;
        let killNow = () => {};
        const killTime = new Promise<void>((resolve) => {
          killNow = resolve;
        });
        const revoker = async (worker: number) => {
          for (const key of keys.filter((_, i) => i % 2 === worker)) {
            attempts++;
            try {
              const response = await fetch(`${url}/keys/${key.id}/revoke`, {
                method: "POST",
                headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
                body: new URLSearchParams({ _csrf: csrf, confirm: "yes" }),
                redirect: "manual",
              });
              await response.arrayBuffer();
              // The revocation is acknowledged by the redirect to the keys page (post/redirect/get).
              if (response.status === 303 && response.headers.get("location") === "/keys") {
                revoked.set(key.key, key.token);
                if (++acknowledged >= killAfter) killNow();
              }
            } catch {
              // The process died under this request: it was never acknowledged.
            }
          }
        };
        const revokers = [0, 1].map(revoker);
        await Promise.race([killTime, Promise.all(revokers)]);
        child.kill("SIGKILL");
        await exited;
        await Promise.all(revokers);
      }

      const { child, url } = await startIdentity();
      try {
        await checkRevoked(url, revoked);
        t.diagnostic(
          `${ROUNDS} kills, ${attempts} revocations tried, ${revoked.size} acknowledged, 0 lost`,
        );
        assert.ok(revoked.size > 0, "revocations were acknowledged");
        assert.ok(revoked.size < attempts, "some revocations were cut off by the kill");
      } finally {
        child.kill("SIGTERM");
      }
    });
  });
}
