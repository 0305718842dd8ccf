import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { testEngines } from "@agentpass/db/testing";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type CliResult, runAdminCli } from "./support/run-cli.ts";

const body = (sessionToken: string) => JSON.stringify({ sessionToken });

for (const engine of testEngines()) {
  describe(`agentpass-server admin CLI (${engine})`, () => {
    let identity: TestIdentity;
    const cli = (...args: string[]) => runAdminCli(args, identity.env);

    before(async () => {
      identity = await openTestIdentity(engine);
    });
    after(() => identity.close());

    it("walks the newcomer's path: account, user key, partner, partner key", async () => {
      const account = await cli("accounts", "create", "Grace@Example.com");
      assert.equal(account.code, 0, account.stderr);
      assert.match(account.stdout, /^[0-9a-f-]{36}\n$/);

      const userKey = await cli("user-keys", "create", "grace@example.com", "--name", "laptop");
      assert.equal(userKey.code, 0, userKey.stderr);
      assert.match(userKey.stdout, /^apu_[0-9A-Za-z]{38}\n$/);

      const partner = await cli(
        "partners",
        "create",
        "--name",
        "Notes",
        "--owner",
        "grace@example.com",
        "--website",
        "https://notes.example",
        "--listed",
        "--json",
      );
      assert.equal(partner.code, 0, partner.stderr);
      const partnerJson = JSON.parse(partner.stdout);
      assert.equal(partnerJson.listed, true);
      assert.equal(partnerJson.website, "https://notes.example");

      const partnerKey = await cli("partner-keys", "create", partnerJson.id, "--json");
      assert.equal(partnerKey.code, 0, partnerKey.stderr);
      const { id, key } = JSON.parse(partnerKey.stdout);
      assert.match(key, /^apk_/);
      assert.match(id, /^[0-9a-f-]{36}$/);

      const token = await identity.token(userKey.stdout.trim());
      const verified = await identity.verify(`Bearer ${key}`, body(token));
      assert.deepEqual(await verified.json(), { email: "grace@example.com" });

      const listed = await cli("partner-keys", "list", partnerJson.id, "--json");
      const rows = JSON.parse(listed.stdout);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].id, id);
      assert.equal(rows[0].revokedAt, null);
      assert.ok(!listed.stdout.includes(key), "a listing never shows the secret");
    });

    it("revokes a partner key from another process: the running service answers 403 next", async () => {
      const partner = await identity.partner();
      const userKey = await identity.userKey();
      const token = await identity.token(userKey.key);
      assert.equal((await identity.verify(`Bearer ${partner.key}`, body(token))).status, 200);
      const revoked = await cli("partner-keys", "revoke", partner.keyId);
      assert.equal(revoked.code, 0, revoked.stderr);
      const response = await identity.verify(`Bearer ${partner.key}`, body(token));
      assert.equal(response.status, 403);
      assert.deepEqual(await response.json(), {
        error: "Partner key has been revoked",
        code: "partner_key_revoked",
      });
    });

    it("revokes a user key from another process: its tokens stop verifying at once", async () => {
      const partner = await identity.partner();
      const userKey = await identity.userKey();
      const token = await identity.token(userKey.key);
      assert.equal((await identity.verify(`Bearer ${partner.key}`, body(token))).status, 200);
      assert.equal((await cli("user-keys", "revoke", userKey.id)).code, 0);
      const response = await identity.verify(`Bearer ${partner.key}`, body(token));
      assert.deepEqual(await response.json(), {
        error: "Invalid or expired session token",
        code: "session_token_invalid",
      });
      assert.equal((await identity.mint(userKey.key)).status, 403);
    });

    it("prints errors on stderr with a non-zero exit", async () => {
      const cases: [string[], number, RegExp][] = [
        [["accounts", "create", "not-an-email"], 1, /Email must look like/],
        [["user-keys", "create", "nobody@example.com"], 1, /No account for nobody@example.com/],
        [["partner-keys", "revoke", crypto.randomUUID()], 1, /No such key/],
        [["partner-keys", "create", crypto.randomUUID()], 1, /No such partner/],
        [["partners", "create", "--name", "X"], 2, /needs --name and --owner/],
        [["frobnicate"], 2, /Unknown command/],
        [["accounts", "create", "a@example.com", "--bogus"], 2, /bogus/],
      ];
      for (const [args, code, message] of cases) {
        const result = await cli(...args);
        assert.equal(result.code, code, args.join(" "));
        assert.equal(result.stdout, "");
        assert.match(result.stderr, message);
      }
    });

    it("escapes control characters in its errors, as in its answers", async () => {
      const keyFile = join(tmpdir(), "missing-folder-\u001b[2J", "key");
      const args = ["partners", "provision", "--name", "X", "--owner", "a@example.com"];
      const result = await cli(...args, "--key-file", keyFile);
      assert.equal(result.code, 1);
      const message = result.stderr
        .split("\n")
        .find((line) => line.startsWith("agentpass-server:"));
      assert.match(message ?? "", /Cannot write .*missing-folder-\\u001b\[2J/);
      assert.ok(!message?.includes("\u001b"), "no raw escape reaches the terminal");
    });

    it("refuses a second account for the same canonical email", async () => {
      assert.equal((await cli("accounts", "create", "dup@example.com")).code, 0);
      const again = await cli("accounts", "create", " DUP@EXAMPLE.com ");
      assert.equal(again.code, 1);
      assert.match(again.stderr, /already exists/);
    });
  });
}

describe("agentpass-server configuration", () => {
  it("stops with a message naming a bad variable", async () => {
    const result = await runAdminCli(["serve"], { PORT: "eighty" });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /Invalid PORT/);
  });
  it("prints usage for --help", async () => {
    const result = await runAdminCli(["--help"], {});
    assert.equal(result.code, 0);
    assert.match(result.stdout, /partner-keys revoke <id>/);
  });
  it("prints its version", async () => {
    const result = await runAdminCli(["--version"], {});
    assert.deepEqual([result.code, result.stdout.trim()], [0, "0.1.0"]);
  });
  it("lists a command's verbs when it is given none", async () => {
    const result = await runAdminCli(["user-keys"], {});
    assert.equal(result.code, 0);
    assert.match(result.stdout, /user-keys create <email>/);
    assert.match(result.stdout, /user-keys revoke <id>/);
    assert.doesNotMatch(result.stdout, /partner-keys/);
  });
  it("answers an unknown option or command with the usage, not the parser's words, and exit 2", async () => {
    for (const args of [["--bogus"], ["frobnicate"], ["user-keys", "list", "--frob"]]) {
      const result = await runAdminCli(args, {});
      assert.equal(result.code, 2, args.join(" "));
      assert.match(
        result.stderr,
        /^agentpass-server: Unknown (option: --\w+|command: frobnicate)\n/,
      );
      assert.match(result.stderr, /Usage:/);
      assert.doesNotMatch(result.stderr, /positional argument/);
    }
  });
});

describe("agentpass-server start checks", () => {
  const folder = mkdtempSync(join(tmpdir(), "agentpass-start-"));
  after(() => rmSync(folder, { recursive: true, force: true }));
  const dataDir = (name: string) => join(folder, name);

  it("names a misspelt variable on stderr and runs, in development", async () => {
    const result = await runBounded(["migrate"], {
      DATA_DIR: dataDir("misspelt"),
      DATABSE_URL: "postgres://db.example/agentpass",
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stderr,
      "agentpass-server: warning: DATABSE_URL: did you mean DATABASE_URL?\n",
    );
    assert.match(result.stdout, /^Applied 0001_core/);
  });

  it("stops serve in production (an https PUBLIC_URL) for a misspelt variable", async () => {
    const result = await runBounded(["serve"], {
      PORT: "0",
      DATA_DIR: dataDir("production"),
      PUBLIC_URL: "https://agentpass.example",
      SMTP_URL: "smtp://127.0.0.1:9",
      DATABSE_URL: "postgres://db.example/agentpass",
    });
    assert.deepEqual(result, {
      code: 1,
      stdout: "",
      stderr:
        "agentpass-server: DATABSE_URL: did you mean DATABASE_URL? (PUBLIC_URL is https: this stops the start)\n",
    });
  });

  it("exits 1 with `DATA_DIR <path>: <reason>` for a DATA_DIR it cannot make, never spinning", async () => {
    const dangling = dataDir("dangling");
    symlinkSync(dataDir("gone"), dangling);
    const cases: [string, string][] = [
      [join(dangling, "data"), `cannot create ${dangling}: file already exists (EEXIST)`],
    ];
    // Where Node's recursive mkdir spun: ENOENT in a directory that exists.
    if (existsSync("/proc/self")) {
      cases.push(["/proc/nope", "cannot create /proc/nope: no such file or directory (ENOENT)"]);
    }
    for (const [path, reason] of cases) {
      const result = await runBounded(["serve"], { PORT: "0", DATA_DIR: path });
      assert.deepEqual(result, {
        code: 1,
        stdout: "",
        stderr: `agentpass-server: DATA_DIR ${path}: ${reason}\n`,
      });
    }
  });

  it("names SMTP_URL when it is malformed, without showing it", async () => {
    const result = await runBounded(["serve"], {
      PORT: "0",
      DATA_DIR: dataDir("smtp"),
      SMTP_URL: "smtp://mailer:hunter2@mail:port",
    });
    assert.deepEqual(result, {
      code: 1,
      stdout: "",
      stderr: "agentpass-server: Invalid SMTP_URL: must be an smtp:// or smtps:// URL\n",
    });
  });

  it("wraps the sealing keys under AGENTPASS_SECRET_FILE's secret, making no identity.secret", async () => {
    const secret = randomBytes(32).toString("base64url");
    const secretFile = join(folder, "agentpass-secret");
    writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
    const env = { DATA_DIR: dataDir("secret-file") };
    assert.equal((await runBounded(["migrate"], env)).code, 0);
    const fromFile = await runBounded(["sealing-keys", "list"], {
      ...env,
      AGENTPASS_SECRET_FILE: secretFile,
    });
    assert.equal(fromFile.code, 0, fromFile.stderr);
    assert.equal(existsSync(join(env.DATA_DIR, "identity.secret")), false);
    const sameSecret = await runBounded(["sealing-keys", "list"], {
      ...env,
      AGENTPASS_SECRET: secret,
    });
    assert.equal(sameSecret.code, 0, sameSecret.stderr);
    assert.equal(sameSecret.stdout, fromFile.stdout);
  });

  it("names AGENTPASS_SECRET_FILE and its path when it cannot be read, never the contents", async () => {
    const unreadable = await runBounded(["serve"], {
      PORT: "0",
      DATA_DIR: dataDir("unreadable"),
      AGENTPASS_SECRET_FILE: folder,
    });
    assert.deepEqual(unreadable, {
      code: 1,
      stdout: "",
      stderr: `agentpass-server: Invalid AGENTPASS_SECRET_FILE: cannot read ${folder}: illegal operation on a directory (EISDIR)\n`,
    });
    const short = join(folder, "short-secret");
    writeFileSync(short, "hunter2\n");
    const invalid = await runBounded(["serve"], {
      PORT: "0",
      DATA_DIR: dataDir("short"),
      AGENTPASS_SECRET_FILE: short,
    });
    assert.equal(invalid.code, 1);
    assert.equal(
      invalid.stderr,
      "agentpass-server: Invalid AGENTPASS_SECRET (read from AGENTPASS_SECRET_FILE): must be at least 32 characters\n",
    );
  });
});

const BIN = fileURLToPath(new URL("../src/bin.ts", import.meta.url));

/**
 * `runAdminCli`, with the process killed if it has not ended after a minute: a start that does
 * not stop (a server that came up, a loop) fails the test instead of outliving it.
 */
function runBounded(args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      {
        env: { PATH: process.env.PATH, LOG_LEVEL: "silent", ...env },
        timeout: 60_000,
        killSignal: "SIGKILL",
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
