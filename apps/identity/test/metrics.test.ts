import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import {
  createTestDatabase,
  startDatabaseProxy,
  type TestDatabase,
  testEngines,
} from "@agentpass/db/testing";
import { type RunningServer, startServer } from "@agentpass/http";
import {
  parsePrometheusText,
  type Sample,
  sampleValue,
} from "../../../packages/http/test/support/prometheus-text.ts";
import { loadConfig } from "../src/config.ts";
import { createAccount } from "../src/domain/accounts.ts";
import { issueKey } from "../src/domain/credentials.ts";
import { generateKey } from "../src/domain/keys.ts";
import { createPartner } from "../src/domain/partners.ts";
import { openIdentityService } from "../src/service.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

const TOKEN = "scraper-token-0123456789";

/** GET /metrics through `identity`, parsed; fails unless it answers 200. */
async function scrape(identity: TestIdentity, headers: Record<string, string> = {}) {
  const response = await identity.app.request("/metrics", { headers });
  assert.equal(response.status, 200, await response.clone().text());
  return parsePrometheusText(await response.text());
}

const outcome = (samples: Sample[], operation: string, code: string) =>
  sampleValue(samples, "agentpass_outcomes_total", { operation, code });

for (const engine of testEngines()) {
  describe(`GET /metrics of the identity service (${engine})`, () => {
    let identity: TestIdentity;
    before(async () => {
      identity = await openTestIdentity(engine, { BAD_KEYS_PER_MINUTE: "2" });
    });
    after(() => identity.close());

    it("parses as Prometheus text, and its verify counter moves by exactly the verifies made", async () => {
      const partner = await identity.partner();
      const user = await identity.userKey();
      const tokens = [await identity.token(user.key), await identity.token(user.key)];
      const before = await scrape(identity);
      const verify = (token: string, key: string | null = partner.key) =>
        identity.verify(
          key === null ? null : `Bearer ${key}`,
          JSON.stringify({ sessionToken: token }),
        );
      for (const token of [...tokens, tokens[0] as string]) {
        assert.equal((await verify(token)).status, 200);
      }
      assert.equal((await verify("aps_not-a-token")).status, 401);
      assert.equal((await verify(tokens[0] as string, null)).status, 401);
      const after = await scrape(identity);
      const moved = (code: string) =>
        outcome(after, "verify", code) - outcome(before, "verify", code);
      assert.equal(moved("ok"), 3);
      assert.equal(moved("session_token_invalid"), 1);
      assert.equal(moved("partner_key_missing_or_invalid"), 1);
      const route = { method: "POST", route: "/api/verify" };
      const requests = (samples: Sample[], code: string) =>
        sampleValue(samples, "agentpass_http_requests_total", { ...route, code });
      assert.equal(requests(after, "200") - requests(before, "200"), 3);
      assert.equal(requests(after, "401") - requests(before, "401"), 2);
      assert.equal(
        sampleValue(after, "agentpass_http_request_duration_seconds_count", route) -
          sampleValue(before, "agentpass_http_request_duration_seconds_count", route),
        5,
      );
      // The partner key and the tokens' owner were read once, then answered from the caches.
      const lookups = (samples: Sample[], result: string) =>
        sampleValue(samples, "agentpass_cache_lookups_total", { result });
      assert.ok(lookups(after, "hit") > lookups(before, "hit"), "cache hits counted");
      assert.ok(lookups(after, "miss") >= lookups(before, "miss"));
    });

    it("counts mints by code, and rate-limit refusals by limiter", async () => {
      const before = await scrape(identity);
      const user = await identity.userKey();
      assert.equal((await identity.mint(user.key)).status, 201);
      const unknown = generateKey("user");
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await identity.mint(unknown)).status);
      assert.deepEqual(statuses, [401, 401, 429]);
      const after = await scrape(identity);
      assert.equal(outcome(after, "mint", "ok") - outcome(before, "mint", "ok"), 1);
      assert.equal(
        outcome(after, "mint", "user_key_invalid") - outcome(before, "mint", "user_key_invalid"),
        2,
      );
      assert.equal(
        outcome(after, "mint", "rate_limited") - outcome(before, "mint", "rate_limited"),
        1,
      );
      const refusals = (samples: Sample[]) =>
        sampleValue(samples, "agentpass_rate_limit_refusals_total", { limiter: "badKeysPerIp" });
      assert.equal(refusals(after) - refusals(before), 1);
    });

    it(`shows the database pool${engine === "postgres" ? "" : " only on PostgreSQL"}`, async () => {
      const samples = await scrape(identity);
      const open = samples.filter((s) => s.name === "agentpass_database_pool_connections");
      if (engine === "postgres") {
        assert.equal(open.length, 1);
        assert.ok((open[0] as Sample).value >= 1);
        assert.equal(sampleValue(samples, "agentpass_database_pool_waiting_queries"), 0);
      } else {
        assert.equal(open.length, 0);
      }
    });

    it("adds the standard process and Node runtime series: memory, event loop lag, GC", async () => {
      const response = await identity.app.request("/metrics");
      const text = await response.text();
      for (const [name, type] of [
        ["process_resident_memory_bytes", "gauge"],
        ["process_cpu_seconds_total", "counter"],
        ["nodejs_eventloop_lag_seconds", "gauge"],
        ["nodejs_heap_size_used_bytes", "gauge"],
        ["nodejs_gc_duration_seconds", "histogram"],
      ]) {
        assert.match(text, new RegExp(`^# TYPE ${name} ${type}$`, "m"), name);
      }
      const samples = parsePrometheusText(text);
      assert.ok(sampleValue(samples, "process_resident_memory_bytes") > 0);
      assert.ok(sampleValue(samples, "nodejs_eventloop_lag_seconds") >= 0);
      // What runs: the service, its version and the Node version running it.
      const { version } = JSON.parse(
        readFileSync(new URL("../package.json", import.meta.url), "utf8"),
      ) as { version: string };
      const build = `agentpass_build_info{service="identity",version="${version}",node_version="${process.versions.node}"} 1`;
      assert.ok(text.split("\n").includes(build), build);
    });
  });

  describe(`/metrics of the identity service is never public by default (${engine})`, () => {
    let behindProxy: TestIdentity;
    let withToken: TestIdentity;
    before(async () => {
      behindProxy = await openTestIdentity(engine, { TRUST_PROXY: "1" });
      withToken = await openTestIdentity(engine, { TRUST_PROXY: "1", METRICS_TOKEN: TOKEN });
    });
    after(async () => {
      await behindProxy.close();
      await withToken.close();
    });

    it("answers 404 to a client the trusted proxy names from elsewhere, 200 to a loopback one, and is no API operation", async () => {
      const outside = await behindProxy.app.request("/metrics", {
        headers: { "x-forwarded-for": "198.51.100.20" },
      });
      assert.equal(outside.status, 404);
      assert.deepEqual(await outside.json(), { error: "Not found", code: "not_found" });
      await scrape(behindProxy, { "x-forwarded-for": "127.0.0.1" });
      const document = (await (await behindProxy.app.request("/api/openapi.json")).json()) as {
        paths: Record<string, unknown>;
      };
      assert.equal(document.paths["/metrics"], undefined, "no API operation of the document");
    });

    it("with METRICS_TOKEN, answers 404 to a wrong token or none, 200 to the token from anywhere", async () => {
      assert.equal((await withToken.app.request("/metrics")).status, 404);
      const wrong = await withToken.app.request("/metrics", {
        headers: { authorization: `Bearer ${TOKEN.slice(0, -1)}X` },
      });
      assert.equal(wrong.status, 404);
      const samples = await scrape(withToken, {
        authorization: `Bearer ${TOKEN}`,
        "x-forwarded-for": "198.51.100.20",
      });
      assert.ok(samples.some((sample) => sample.name === "agentpass_http_requests_total"));
    });
  });
}

// PostgreSQL only: SQLite is a file in the process, it cannot stop under it.
if (testEngines().includes("postgres")) {
  describe("GET /metrics of the identity service while PostgreSQL is stopped", () => {
    let database: TestDatabase;
    let proxy: Awaited<ReturnType<typeof startDatabaseProxy>>;
    let server: RunningServer;
    let partnerKey: string;

    before(async () => {
      database = await createTestDatabase("postgres");
      proxy = await startDatabaseProxy(database.databaseUrl as string);
      const loaded = loadConfig({
        DATA_DIR: database.dataDir,
        DATABASE_URL: proxy.databaseUrl,
        LOG_LEVEL: "silent",
      });
      if (!loaded.ok) throw new Error(loaded.error);
      const service = await openIdentityService(loaded.config);
      server = await startServer(service, { port: 0, host: "127.0.0.1" });
      const account = await createAccount(service.ctx, "operator@example.com");
      if (!account.ok) throw new Error(account.code);
      const partner = await createPartner(service.ctx, {
        ownerAccountId: account.account.id,
        name: "P",
      });
      if (!partner.ok) throw new Error(partner.reason);
      const issued = await issueKey(service.ctx, "partner", partner.partner.id, "server");
      if (!issued.ok) throw new Error(issued.code);
      partnerKey = issued.key;
    });
    after(async () => {
      await proxy?.start();
      await server?.close();
      await proxy?.stop();
      await database?.drop();
    });

    async function scrapeServer() {
      const response = await fetch(`${server.url}/metrics`);
      assert.equal(response.status, 200);
      return parsePrometheusText(await response.text());
    }

    it("counts each statement the database could not answer, answered 503", async () => {
      const before = await scrapeServer();
      await proxy.stop();
      const verified = await fetch(`${server.url}/api/verify`, {
        method: "POST",
        headers: { authorization: `Bearer ${partnerKey}`, "content-type": "application/json" },
        body: JSON.stringify({ sessionToken: "aps_any" }),
      });
      assert.equal(verified.status, 503);
      const after = await scrapeServer();
      await proxy.start();
      const moved = (name: string, labels: Record<string, string>) =>
        sampleValue(after, name, labels) - sampleValue(before, name, labels);
      assert.equal(moved("agentpass_http_unavailable_total", { code: "unavailable" }), 1);
      assert.equal(
        moved("agentpass_outcomes_total", { operation: "verify", code: "unavailable" }),
        1,
      );
    });
  });
}
