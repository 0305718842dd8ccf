import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import {
  createTestDatabase,
  freePort,
  type TestDatabase,
  testEngines,
} from "@agentpass/db/testing";
import { startTestIdentityService, type TestIdentityService } from "@agentpass/identity/testing";
import { BIN, cliRunner, type Run } from "./support/run-cli.ts";

/**
 * `agentpass agents` (issue 54): agents of a saved login, each with its own Ed25519 key under
 * the login's host key, registered with the Agent Auth Protocol and approved by the person;
 * `token --agent` and `headers --agent` act as one, and partners see which.
 */

const EMAIL = "agents.owner@example.com";

for (const engine of testEngines()) {
  describe(`agentpass agents (${engine})`, () => {
    let database: TestDatabase;
    let identity: TestIdentityService;
    let home: string;
    const secrets: string[] = [];
    const run = cliRunner({ home: () => home, url: () => identity.url, secrets });
    const profile = () =>
      JSON.parse(readFileSync(join(home, ".config", "agentpass", "credentials.json"), "utf8"))[
        identity.url
      ];
    let partner: { id: string; key: string };

    /**
     * `agentpass agents add <name>`, approved (or denied) in the "browser" as soon as the CLI
     * shows its code: the person's part, while the CLI polls.
     */
    function addAgent(name: string, approve = true): Promise<Run & { code: number }> {
      return new Promise((resolve) => {
        const child = spawn(process.execPath, [BIN, "agents", "add", name], {
          env: {
            PATH: process.env.PATH,
            HOME: home,
            XDG_CONFIG_HOME: join(home, ".config"),
            AGENTPASS_URL: identity.url,
          },
        });
        let stdout = "";
        let stderr = "";
        let decided = false;
        child.stdout.on("data", (chunk) => {
          stdout += chunk;
        });
        child.stderr.on("data", (chunk) => {
          stderr += chunk;
          const code = /enter the code ([A-Z]{4}-[A-Z]{4})/.exec(stderr)?.[1];
          if (code && !decided) {
            decided = true;
            void identity.decideAgent(code, EMAIL, approve);
          }
        });
        child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
      });
    }

    async function verify(token: string) {
      const response = await fetch(`${identity.url}/api/verify`, {
        method: "POST",
        headers: { authorization: `Bearer ${partner.key}`, "content-type": "application/json" },
        body: JSON.stringify({ sessionToken: token }),
      });
      return { status: response.status, body: await response.json() };
    }

    before(async () => {
      database = await createTestDatabase(engine);
      const port = await freePort();
      identity = await startTestIdentityService({
        databaseUrl: database.databaseUrl,
        port,
        env: { PUBLIC_URL: `http://127.0.0.1:${port}` },
      });
      const made = await identity.createPartner({ name: "Notes", ownerEmail: "n@example.com" });
      partner = { id: made.id, key: (await identity.createPartnerKey(made.id)).key };
    });
    after(async () => {
      await identity.close();
      await database.drop();
    });
    beforeEach(async () => {
      home = mkdtempSync(join(tmpdir(), "agentpass-cli-agents-"));
      const userKey = await identity.createUserKey(EMAIL);
      secrets.push(userKey.key);
      const login = await run(["login", "--with-key"], `${userKey.key}\n`);
      assert.equal(login.code, 0, login.stderr);
    });

    it("adds two agents, approved in the browser, and mints as each; revoking one leaves the other", async () => {
      const first = await addAgent("claude-code");
      assert.equal(first.code, 0, first.stderr);
      assert.match(
        first.stderr,
        /To approve agent claude-code, open http:\/\/127\.0\.0\.1:\d+\/device/,
      );
      assert.match(first.stdout, /^Agent claude-code is active \(agt_[\w-]{22}\)\n$/);
      const second = await addAgent("nightly job");
      assert.equal(second.code, 0, second.stderr);
      const saved = profile();
      assert.deepEqual(Object.keys(saved.agents).sort(), ["claude-code", "nightly job"]);
      assert.deepEqual([saved.hostKey.kty, saved.hostKey.crv], ["OKP", "Ed25519"]);
      for (const agent of Object.values(saved.agents) as Array<{ key: { d: string } }>) {
        secrets.push(agent.key.d);
      }
      secrets.push(saved.hostKey.d);
      assert.equal(
        statSync(join(home, ".config", "agentpass", "credentials.json")).mode & 0o777,
        0o600,
      );

      const list = await run(["agents", "list", "--json"]);
      assert.equal(list.code, 0, list.stderr);
      assert.deepEqual(
        (JSON.parse(list.stdout) as Array<{ name: string; status: string }>).map(
          ({ name, status }) => [name, status],
        ),
        [
          ["claude-code", "active"],
          ["nightly job", "active"],
        ],
      );

      const token = await run(["token", "--agent", "claude-code"]);
      assert.equal(token.code, 0, token.stderr);
      const verified = await verify(token.stdout.trim());
      assert.equal(verified.status, 200);
      assert.deepEqual(verified.body, {
        email: EMAIL,
        agent: { id: saved.agents["claude-code"].id, name: "claude-code" },
      });
      const plain = await run(["token"]);
      assert.deepEqual((await verify(plain.stdout.trim())).body, { email: EMAIL });

      const headers = await run([
        "headers",
        "--agent",
        "nightly job",
        "GET",
        "https://notes.example/a",
      ]);
      assert.equal(headers.code, 0, headers.stderr);
      assert.match(
        headers.stdout,
        /^Authorization: DPoP aps_[\w-]+\nDPoP: [\w-]+\.[\w-]+\.[\w-]+\n$/,
      );

      const revoked = await run(["agents", "revoke", "claude-code"]);
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.equal((await verify(token.stdout.trim())).status, 401, "its token stops at once");
      const again = await run(["token", "--agent", "claude-code", "--fresh"]);
      assert.equal(again.code, 2, "forgotten here");
      const other = await run(["token", "--agent", "nightly job", "--fresh"]);
      assert.equal(other.code, 0, other.stderr);
      assert.equal((await verify(other.stdout.trim())).status, 200);
    });

    it("says so when the person denies the agent, and saves nothing", async () => {
      const denied = await addAgent("unwanted", false);
      assert.equal(denied.code, 1);
      assert.match(denied.stderr, /The agent was denied in the browser/);
      assert.equal(profile().agents?.unwanted, undefined);
      const usage = await run(["agents", "frobnicate"]);
      assert.equal(usage.code, 2);
    });
  });
}
