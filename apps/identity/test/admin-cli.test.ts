import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { runAdminCli } from "./support/run-cli.ts";

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
