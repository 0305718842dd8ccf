import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import {
  awaitRoomInRateWindow,
  startTestIdentityService,
  type TestIdentityService,
} from "@agentpass/identity/testing";
import { BIN, cliRunner, type Run } from "./support/run-cli.ts";

describe("agentpass CLI against a real identity service", () => {
  let identity: TestIdentityService;
  let home: string;
  let userKey: { id: string; key: string };
  const secrets: string[] = [];

  const run = cliRunner({ home: () => home, url: () => identity.url, secrets });

  const login = () => run(["login", "--with-key"], `${userKey.key}\n`);
  const configFile = (name: string) => join(home, ".config", "agentpass", name);
  const savedKey = (): string | undefined =>
    JSON.parse(readFileSync(configFile("credentials.json"), "utf8"))[identity.url]?.key;
  /** The status of a mint (`POST /api/session-tokens`) with `key`: 201 while it works, 403 once it is revoked. */
  const mintStatus = async (key: string) =>
    (
      await fetch(`${identity.url}/api/session-tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: "{}",
      })
    ).status;
  const verifyStatus = async (sessionToken: string, partnerId: string) => {
    const partnerKey = await identity.createPartnerKey(partnerId);
    const response = await fetch(`${identity.url}/api/verify`, {
      method: "POST",
      headers: { authorization: `Bearer ${partnerKey.key}` },
      body: JSON.stringify({ sessionToken }),
    });
    return response.status;
  };

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
    assert.equal(await verifyStatus(json.sessionToken, partner.id), 200);
    assert.equal(await verifyStatus(json.sessionToken, other.id), 401);
  });

  it("names no server of its own: without --url, AGENTPASS_URL or a saved login it sends nothing and exits 2", async () => {
    const unset = { AGENTPASS_URL: undefined };
    // `token` first: it would only read files, never send the key, whatever the default.
    for (const args of [["token"], ["status"], ["logout"], ["login", "--with-key"]]) {
      const result = await run(args, `${userKey.key}\n`, unset);
      assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
      assert.equal(result.stdout, "");
      assert.equal(
        result.stderr,
        "agentpass: No AgentPass server: pass --url <url> or set AGENTPASS_URL\n",
      );
    }
    assert.equal(await mintStatus(userKey.key), 201);
    const help = await run(["--help"], "", unset);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--url <url> +AgentPass server \(default: \$AGENTPASS_URL/);
    assert.doesNotMatch(help.stdout, /agentpass\.dev|https:\/\//);
  });

  it("uses the server of the saved login when no --url or AGENTPASS_URL names one, and refuses to pick among several", async () => {
    await login();
    const unset = { AGENTPASS_URL: undefined };
    const token = await run(["token"], "", unset);
    assert.equal(token.code, 0, token.stderr);
    assert.match(token.stdout, /^aps_/);
    const status = await run(["status"], "", unset);
    assert.match(status.stdout, new RegExp(`^Server: ${identity.url}\n`));

    const other = "http://127.0.0.1:9";
    const credentials = JSON.parse(readFileSync(configFile("credentials.json"), "utf8"));
    credentials[other] = { key: userKey.key, savedAt: new Date().toISOString() };
    writeFileSync(configFile("credentials.json"), JSON.stringify(credentials), { mode: 0o600 });
    const ambiguous = await run(["token"], "", unset);
    assert.equal(ambiguous.code, 2);
    assert.equal(ambiguous.stdout, "");
    assert.equal(
      ambiguous.stderr,
      `agentpass: Logged in to several AgentPass servers (${identity.url}, ${other}): pass --url <url> or set AGENTPASS_URL\n`,
    );
    assert.equal((await run(["token", "--url", identity.url], "", unset)).code, 0);
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
    assert.match(
      result.stderr,
      /Your user key was rejected \(The refresh token has been revoked\)/,
    );
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
      // The login and the two mints count in one window of the real clock.
      await awaitRoomInRateWindow(20_000);
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

  it("shows status and logs out, revoking the key on the server and deleting the files", async () => {
    await login();
    const status = await run(["status"]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(
      status.stdout,
      /Server: http:\/\/127\.0\.0\.1:\d+\nKey: +apu_\w{8}…\nStatus: working/,
    );
    const partner = await identity.createPartner({ name: "L", ownerEmail: "l@example.com" });
    const sessionToken = (await run(["token"])).stdout.trim();
    assert.equal(await verifyStatus(sessionToken, partner.id), 200);
    const logout = await run(["logout"]);
    assert.equal(logout.code, 0, logout.stderr);
    assert.match(
      logout.stdout,
      /Logged out of http:\/\/127\.0\.0\.1:\d+: key apu_\w{8}… is revoked/,
    );
    assert.doesNotMatch(readFileSync(configFile("credentials.json"), "utf8"), /apu_/);
    assert.doesNotMatch(readFileSync(configFile("tokens.json"), "utf8"), /aps_/);
    assert.equal((await run(["token"])).code, 3);
    assert.equal(await mintStatus(userKey.key), 403, "the key is revoked on the server");
    assert.equal(await verifyStatus(sessionToken, partner.id), 401, "and so are its tokens");
  });

  it("logs out with --local without revoking, and says the key still works", async () => {
    await login();
    const logout = await run(["logout", "--local"]);
    assert.equal(logout.code, 0, logout.stderr);
    assert.match(
      logout.stdout,
      /on this machine only: key apu_\w{8}… still works until you revoke it at http:\/\/127\.0\.0\.1:\d+\/keys/,
    );
    assert.doesNotMatch(readFileSync(configFile("credentials.json"), "utf8"), /apu_/);
    assert.equal(await mintStatus(userKey.key), 201);
  });

  it("still forgets the key when the server is down, says it is live and where to revoke, exits 5", async () => {
    const down = "http://127.0.0.1:9";
    mkdirSync(join(home, ".config", "agentpass"), { recursive: true, mode: 0o700 });
    writeFileSync(
      configFile("credentials.json"),
      JSON.stringify({ [down]: { key: userKey.key, savedAt: new Date().toISOString() } }),
      { mode: 0o600 },
    );
    const logout = await run(["logout", "--url", down]);
    assert.equal(logout.code, 5);
    assert.equal(logout.stdout, "");
    assert.match(
      logout.stderr,
      /^agentpass: Forgot the key on this machine, but AgentPass at http:\/\/127\.0\.0\.1:9 cannot be reached: key apu_\w{8}… is still live\. Revoke it at http:\/\/127\.0\.0\.1:9\/keys\n$/,
    );
    assert.doesNotMatch(readFileSync(configFile("credentials.json"), "utf8"), /apu_/);
    assert.equal((await run(["token", "--url", down])).code, 3);
  });

  it("says a key given again with --with-key is already saved, and revokes nothing", async () => {
    await login();
    const again = await login();
    assert.equal(again.code, 0, again.stderr);
    assert.match(
      again.stdout,
      /^Key apu_\w{8}… is already saved for http:\/\/127\.0\.0\.1:\d+: nothing changed\n$/,
    );
    assert.doesNotMatch(again.stderr, /replaces/);
    assert.equal(savedKey(), userKey.key);
    assert.equal(await mintStatus(userKey.key), 201);
  });

  it("replaces a key given with --with-key, naming it first, and revokes it once the new one is saved", async () => {
    await login();
    const next = await identity.createUserKey("Agent.Owner@example.com", "second");
    secrets.push(next.key);
    const replaced = await run(["login", "--with-key"], `${next.key}\n`);
    assert.equal(replaced.code, 0, replaced.stderr);
    const old = userKey.key.slice(0, 12);
    assert.match(
      replaced.stderr,
      new RegExp(`Key ${old}… is saved for .*: the new key replaces it`),
    );
    assert.match(
      replaced.stdout,
      new RegExp(
        `^Logged in to .* with key ${next.key.slice(0, 12)}…\nReplaced key ${old}…, now revoked\n$`,
      ),
    );
    assert.equal(savedKey(), next.key);
    assert.equal(await mintStatus(userKey.key), 403);
    assert.equal(await mintStatus(next.key), 201);
  });

  it("binds the token to the partner of a registered --resource, and names an unknown one", async () => {
    await login();
    const partner = await identity.createPartner({ name: "R", ownerEmail: "r@example.com" });
    const other = await identity.createPartner({ name: "S", ownerEmail: "s@example.com" });
    await identity.addPartnerResource(partner.id, "https://notes.example/api");
    const bound = await run(["token", "--resource", "https://notes.example/api"]);
    assert.equal(bound.code, 0, bound.stderr);
    assert.equal(await verifyStatus(bound.stdout.trim(), partner.id), 200);
    assert.equal(await verifyStatus(bound.stdout.trim(), other.id), 401);
    assert.notEqual(
      (await run(["token"])).stdout,
      bound.stdout,
      "cached apart from unbound tokens",
    );

    const unknown = await run(["token", "--resource", "https://unknown.example/api"]);
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stdout, "");
    assert.match(
      unknown.stderr,
      /^agentpass: No partner is registered for the resource https:\/\/unknown\.example\/api \(Unknown or unauthorized resource\)\n$/,
    );
    const both = await run([
      "token",
      "--resource",
      "https://notes.example/api",
      "--audience",
      partner.id,
    ]);
    assert.equal(both.code, 2);
  });

  it("counts expiresAt from this machine's clock and the token's expires_in (OAuth refresh grant)", async () => {
    // A server whose clock is an hour behind: its own expiresAt would already be past here.
    const skewed = await startTestIdentityService({ clock: () => Date.now() - 3_600_000 });
    try {
      const key = await skewed.createUserKey("skewed@example.com");
      secrets.push(key.key);
      const env = { AGENTPASS_URL: skewed.url };
      assert.equal((await run(["login", "--with-key"], `${key.key}\n`, env)).code, 0);
      const before = Date.now();
      const minted = await run(["token", "--fresh", "--json"], "", env);
      assert.equal(minted.code, 0, minted.stderr);
      const expiresAt = Date.parse(JSON.parse(minted.stdout).expiresAt);
      assert.ok(expiresAt >= before + 300_000 && expiresAt <= Date.now() + 300_000, minted.stdout);
    } finally {
      await skewed.close();
    }
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

    it("saves a new key of the OAuth client agentpass-cli once the person approves", async () => {
      const login = startBrowserLogin();
      const userCode = await login.code;
      assert.equal(await identity.decideDeviceLogin(userCode, "Device.Owner@example.com"), true);
      const result = await login.exit;
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /Logged in to http:\/\/127\.0\.0\.1:\d+ with key apu_/);
      assert.match(result.stderr, /open http:\/\/.*\/device and enter the code/);
      assert.equal(statSync(configFile("credentials.json")).mode & 0o777, 0o600);
      const key = savedKey();
      assert.ok(key);
      secrets.push(key);
      // The login has a DPoP key of its own; the key itself stays unbound (no proof at login).
      const { dpopKey } = JSON.parse(readFileSync(configFile("credentials.json"), "utf8"))[
        identity.url
      ];
      assert.deepEqual([dpopKey.kty, dpopKey.crv, typeof dpopKey.d], ["EC", "P-256", "string"]);
      assert.ok(!result.stdout.includes(dpopKey.d) && !result.stderr.includes(dpopKey.d));
      // Only the OAuth device grant records its client on the key (the old JSON one did not).
      assert.equal(await identity.clientOfUserKey(key), "agentpass-cli");
      // The access token of the device grant is cached: `token` answers it without a mint.
      const cached = Object.values(JSON.parse(readFileSync(configFile("tokens.json"), "utf8")));
      assert.equal(cached.length, 1);
      assert.equal(
        (await run(["token"])).stdout.trim(),
        (cached[0] as { sessionToken: string }).sessionToken,
      );
      const refreshed = await fetch(`${identity.url}/oauth/token`, {
        method: "POST",
        body: new URLSearchParams({
          grant_type: "refresh_token",
          refresh_token: key,
          client_id: "agentpass-cli",
        }),
      });
      assert.equal(refreshed.status, 200);
      assert.equal((await run(["logout"])).code, 0);
      assert.equal(await mintStatus(key), 403);
    });

    it("names the saved key before starting, and revokes it once the new one is saved", async () => {
      await login();
      const login2 = startBrowserLogin();
      const userCode = await login2.code;
      await identity.decideDeviceLogin(userCode, "Agent.Owner@example.com");
      const result = await login2.exit;
      assert.equal(result.code, 0, result.stderr);
      const old = userKey.key.slice(0, 12);
      const named = result.stderr.indexOf(`Key ${old}… is saved for ${identity.url}`);
      assert.ok(named >= 0 && named < result.stderr.indexOf("enter the code"), result.stderr);
      assert.match(result.stdout, new RegExp(`\nReplaced key ${old}…, now revoked\n$`));
      const key = savedKey();
      assert.ok(key && key !== userKey.key);
      secrets.push(key);
      assert.equal(await mintStatus(userKey.key), 403);
      assert.equal(await mintStatus(key), 201);
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
    for (const command of [[], ["login"], ["token"], ["headers"], ["status"], ["logout"]]) {
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
