import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { startTestIdentityService, type TestIdentityService } from "@agentpass/identity/testing";

const BIN = fileURLToPath(new URL("../src/bin.ts", import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe("agentpass CLI against a real identity service", () => {
  let identity: TestIdentityService;
  let home: string;
  let userKey: { id: string; key: string };
  const secrets: string[] = [];

  const run = (args: string[], stdin?: string, env: Record<string, string> = {}): Promise<Run> =>
    new Promise((resolve) => {
      const child = execFile(
        process.execPath,
        [BIN, ...args],
        {
          env: {
            PATH: process.env.PATH,
            HOME: home,
            XDG_CONFIG_HOME: join(home, ".config"),
            AGENTPASS_URL: identity.url,
            ...env,
          },
        },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
          for (const secret of secrets) {
            assert.ok(!stdout.includes(secret) && !stderr.includes(secret), "a key was printed");
          }
          resolve({ code, stdout, stderr });
        },
      );
      child.stdin?.end(stdin ?? "");
    });

  const login = () => run(["login", "--with-key"], `${userKey.key}\n`);
  const configFile = (name: string) => join(home, ".config", "agentpass", name);

  before(async () => {
    identity = await startTestIdentityService();
  });
  after(() => identity.close());
  beforeEach(async () => {
    home = mkdtempSync(join(tmpdir(), "agentpass-cli-home-"));
    userKey = await identity.createUserKey("Agent.Owner@example.com");
    secrets.push(userKey.key);
  });

  it("logs in from stdin, with the config folder 0700 and its files 0600", async () => {
    const result = await login();
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`Logged in to ${identity.url} with key apu_`));
    assert.equal(statSync(join(home, ".config", "agentpass")).mode & 0o777, 0o700);
    for (const file of ["credentials.json", "tokens.json"]) {
      assert.equal(statSync(configFile(file)).mode & 0o777, 0o600, file);
    }
    const saved = JSON.parse(readFileSync(configFile("credentials.json"), "utf8"));
    assert.equal(saved[identity.url].key, userKey.key);
    rmSync(home, { recursive: true, force: true });
  });

  it("prints a token alone on stdout that the partner can verify", async () => {
    await login();
    const result = await run(["token"]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^aps_[A-Za-z0-9_-]+\n$/);
    const partner = await identity.createPartner({ name: "P", ownerEmail: "p@example.com" });
    const partnerKey = await identity.createPartnerKey(partner.id);
    const verified = await fetch(`${identity.url}/api/verify`, {
      method: "POST",
      headers: { authorization: `Bearer ${partnerKey.key}` },
      body: JSON.stringify({ sessionToken: result.stdout.trim() }),
    });
    assert.deepEqual(await verified.json(), { email: "agent.owner@example.com" });
  });

  it("reuses the cached token while it has enough life, and mints with --fresh", async () => {
    await login();
    const first = (await run(["token"])).stdout;
    assert.equal((await run(["token"])).stdout, first);
    assert.notEqual((await run(["token", "--fresh"])).stdout, first);
  });

  it("mints a new token when the cached one is too close to expiry", async () => {
    await login();
    const first = (await run(["token"])).stdout;
    // Demand more life than a 300 s token has: the cached one no longer qualifies.
    const refreshed = await run(["token"], "", { AGENTPASS_TOKEN_MIN_TTL_SECONDS: "301" });
    assert.notEqual(refreshed.stdout, first);
  });

  it("prints JSON with --json and binds the token with --audience", async () => {
    await login();
    const partner = await identity.createPartner({ name: "A", ownerEmail: "a@example.com" });
    const other = await identity.createPartner({ name: "B", ownerEmail: "b@example.com" });
    const result = await run(["token", "--json", "--audience", partner.id]);
    const json = JSON.parse(result.stdout);
    assert.deepEqual(Object.keys(json).sort(), ["expiresAt", "sessionToken"]);
    const verifyWith = async (partnerId: string) => {
      const key = await identity.createPartnerKey(partnerId);
      const response = await fetch(`${identity.url}/api/verify`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.key}` },
        body: JSON.stringify({ sessionToken: json.sessionToken }),
      });
      return response.status;
    };
    assert.equal(await verifyWith(partner.id), 200);
    assert.equal(await verifyWith(other.id), 401);
  });

  it("exits 3 when not logged in", async () => {
    const result = await run(["token"]);
    assert.equal(result.code, 3);
    assert.equal(result.stdout, "");
    assert.match(result.stderr, /Not logged in to .*agentpass login/);
  });

  it("exits 4 once the key is revoked, and refuses a malformed key without saving it", async () => {
    await login();
    await identity.revokeUserKey(userKey.id);
    const result = await run(["token", "--fresh"]);
    assert.equal(result.code, 4);
    assert.match(result.stderr, /User key has been revoked/);
    const bad = await run(["login", "--with-key"], "apu_not-a-key\n");
    assert.equal(bad.code, 4);
    assert.match(bad.stderr, /not an AgentPass user key/);
  });

  it("says when the key minted too many tokens, with the wait, and exits 1", async () => {
    const strict = await startTestIdentityService({ env: { MINTS_PER_MINUTE: "2" } });
    try {
      const key = await strict.createUserKey("busy.agent@example.com");
      secrets.push(key.key);
      const env = { AGENTPASS_URL: strict.url };
      assert.equal((await run(["login", "--with-key"], `${key.key}\n`, env)).code, 0);
      assert.equal((await run(["token", "--fresh"], "", env)).code, 0);
      const refused = await run(["token", "--fresh"], "", env);
      assert.equal(refused.code, 1);
      assert.equal(refused.stdout, "");
      assert.match(
        refused.stderr,
        /Too many tokens minted with this key; try again in \d+ seconds/,
      );
    } finally {
      await strict.close();
    }
  });

  it("exits 5 when the server cannot be reached", async () => {
    await login();
    const result = await run(["token", "--fresh", "--url", "http://127.0.0.1:9"]);
    assert.equal(result.code, 3, "a different server has no saved key");
    const unreachable = await run(
      ["login", "--with-key", "--url", "http://127.0.0.1:9"],
      userKey.key,
    );
    assert.equal(unreachable.code, 5);
    assert.match(unreachable.stderr, /Cannot reach AgentPass at http:\/\/127\.0\.0\.1:9/);
  });

  it("shows status and logs out, deleting the key and tokens", async () => {
    await login();
    const status = await run(["status"]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(
      status.stdout,
      /Server: http:\/\/127\.0\.0\.1:\d+\nKey: +apu_\w{8}…\nStatus: working/,
    );
    const logout = await run(["logout"]);
    assert.equal(logout.code, 0);
    assert.doesNotMatch(readFileSync(configFile("credentials.json"), "utf8"), /apu_/);
    assert.doesNotMatch(readFileSync(configFile("tokens.json"), "utf8"), /aps_/);
    assert.equal((await run(["token"])).code, 3);
  });

  describe("login through the browser (device login)", () => {
    /** Starts `agentpass login --no-browser` and resolves with the code it shows, and its end. */
    function startBrowserLogin() {
      const child = spawn(process.execPath, [BIN, "login", "--no-browser"], {
        env: {
          PATH: process.env.PATH,
          HOME: home,
          XDG_CONFIG_HOME: join(home, ".config"),
          AGENTPASS_URL: identity.url,
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk) => {
        stdout += chunk;
      });
      const code = new Promise<string>((resolve) => {
        child.stderr.on("data", (chunk) => {
          stderr += chunk;
          const shown = /enter the code ([A-Z]{4}-[A-Z]{4})/.exec(stderr)?.[1];
          if (shown) resolve(shown);
        });
      });
      const exit = new Promise<Run>((resolve) =>
        child.on("exit", (status) => resolve({ code: status ?? 1, stdout, stderr })),
      );
      // A CLI that ends before showing a code fails the test instead of leaving it waiting.
      const shownOrEnded = Promise.race([
        code,
        exit.then((run) => Promise.reject(new Error(`login ended first: ${run.stderr}`))),
      ]);
      return { code: shownOrEnded, exit };
    }

    it("saves a new key named after the machine once the person approves", async () => {
      const login = startBrowserLogin();
      const userCode = await login.code;
      assert.equal(await identity.decideDeviceLogin(userCode, "Device.Owner@example.com"), true);
      const result = await login.exit;
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /Logged in to http:\/\/127\.0\.0\.1:\d+ with key apu_/);
      assert.match(result.stderr, /open http:\/\/.*\/device and enter the code/);
      assert.equal((await run(["token"])).code, 0);
      assert.equal(statSync(configFile("credentials.json")).mode & 0o777, 0o600);
    });

    it("fails with a clear line when the person denies", async () => {
      const login = startBrowserLogin();
      await identity.decideDeviceLogin(await login.code, "Device.Owner@example.com", false);
      const result = await login.exit;
      assert.equal(result.code, 1);
      assert.match(result.stderr, /agentpass: The login was denied in the browser/);
      assert.equal((await run(["token"])).code, 3, "nothing was saved");
    });
  });

  it("answers --help for every command and exits 2 on usage errors", async () => {
    for (const command of [[], ["login"], ["token"], ["status"], ["logout"]]) {
      const result = await run([...command, "--help"]);
      assert.equal(result.code, 0);
      assert.match(result.stdout, /agentpass/);
    }
    const unknown = await run(["frobnicate"]);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /Unknown command: frobnicate\n\nagentpass — /);
    const bogus = await run(["token", "--bogus"]);
    assert.equal(bogus.code, 2);
    assert.match(bogus.stderr, /Unknown option: --bogus\n\nagentpass token \[--fresh\]/);
    assert.doesNotMatch(bogus.stderr, /positional argument/);
    assert.equal((await run(["--version"])).stdout.trim(), "0.1.0");
    assert.equal((await run(["login", "apu_key-as-argument"])).code, 2);
  });
});
