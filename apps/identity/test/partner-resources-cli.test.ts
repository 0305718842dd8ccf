import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { runAdminCli } from "./support/run-cli.ts";

for (const engine of testEngines()) {
  describe(`agentpass-server partner-resources (${engine})`, () => {
    let identity: TestIdentity;
    const cli = (...args: string[]) => runAdminCli(args, identity.env);

    before(async () => {
      identity = await openTestIdentity(engine);
    });
    after(() => identity.close());

    /** An access token of the refresh grant asked for `resource` (RFC 8707), as the CLI asks. */
    async function tokenFor(userKey: string, resource: string) {
      const response = await identity.app.request("/oauth/token", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "refresh_token",
          refresh_token: userKey,
          client_id: "agentpass-cli",
          resource,
        }).toString(),
      });
      return { status: response.status, body: await response.json() };
    }

    /** What introspection tells `partnerKey` of `token` (RFC 7662). */
    async function introspect(partnerKey: string, token: string) {
      const response = await identity.app.request("/oauth/introspect", {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: `Bearer ${partnerKey}`,
        },
        body: new URLSearchParams({ token }).toString(),
      });
      return response.json();
    }

    it("registers a partner's resource URL from another process: tokens asked for it are bound to the partner", async () => {
      const partner = await identity.partner();
      const user = await identity.userKey();
      const url = `https://notes-${crypto.randomUUID()}.example/mcp`;
      const unknown = await tokenFor(user.key, url);
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.error, "invalid_target");

      const added = await cli("partner-resources", "add", partner.id, url);
      assert.deepEqual(added, { code: 0, stdout: "added\n", stderr: "" });
      const listed = await cli("partner-resources", "list", partner.id, "--json");
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual(JSON.parse(listed.stdout), [url]);
      assert.equal((await cli("partner-resources", "list", partner.id)).stdout, `${url}\n`);

      const bound = await tokenFor(user.key, url);
      assert.equal(bound.status, 200, JSON.stringify(bound.body));
      const seen = await introspect(partner.key, bound.body.access_token);
      assert.equal(seen.active, true);
      assert.equal(seen.aud, partner.id);

      assert.equal((await cli("partner-resources", "add", partner.id, url)).code, 0, "again");
      const removed = await cli("partner-resources", "remove", partner.id, url);
      assert.deepEqual(removed, { code: 0, stdout: "removed\n", stderr: "" });
      assert.deepEqual(
        JSON.parse((await cli("partner-resources", "list", partner.id, "--json")).stdout),
        [],
      );
      assert.equal((await tokenFor(user.key, url)).status, 400, "unknown again once removed");
    });

    it("refuses what the dashboard refuses, on stderr with exit 1, and bad usage with exit 2", async () => {
      const partner = await identity.partner();
      const other = await identity.partner();
      const url = `https://taken-${crypto.randomUUID()}.example`;
      assert.equal((await cli("partner-resources", "add", other.id, url)).code, 0);
      const cases: [string[], number, RegExp][] = [
        [["partner-resources", "add", partner.id, url], 1, /Another partner already answers/],
        [["partner-resources", "add", partner.id, "http://notes.example"], 1, /https URL/],
        [["partner-resources", "add", partner.id, "https://a.example/?q=1"], 1, /without a query/],
        [["partner-resources", "add", crypto.randomUUID(), url], 1, /No such partner/],
        [["partner-resources", "list", crypto.randomUUID()], 1, /No such partner/],
        [["partner-resources", "add", partner.id], 2, /Missing resource URL/],
        [["partner-resources", "add"], 2, /Missing partner id/],
        [["partner-resources", "list", partner.id, url], 2, /Unexpected argument/],
        [["partner-resources", "add", partner.id, url, url], 2, /Unexpected argument/],
      ];
      for (const [args, code, message] of cases) {
        const result = await cli(...args);
        assert.equal(result.code, code, args.join(" "));
        assert.equal(result.stdout, "", args.join(" "));
        assert.match(result.stderr, message, args.join(" "));
      }
    });
  });
}
