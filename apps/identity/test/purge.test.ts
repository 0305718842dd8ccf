import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { openDatabase } from "@agentpass/db";
import { testEngines } from "@agentpass/db/testing";
import { type Kysely, type RawBuilder, sql } from "kysely";
import { EXPIRING, PURGE_BATCH, purgeBatch, purgeExpired } from "../src/store/purge.ts";
import type { IdentityDatabase } from "../src/store/schema.ts";
import { openTestIdentity } from "./support/harness.ts";

const DAY = 24 * 60 * 60 * 1000;

for (const engine of testEngines()) {
  describe(`expired rows are purged, off the request path (${engine})`, () => {
    it("deletes every expired sign-in code, device code, session, remembered browser and old counter, in batches, and keeps the rest", async () => {
      const identity = await openTestIdentity(engine);
      const { db } = identity;
      const now = identity.now();
      const account = await identity.account();
      try {
        // More expired codes than one batch deletes: the purge goes on until none is left.
        const codes = Array.from({ length: PURGE_BATCH + 250 }, (_, i) => ({
          id: `expired-${i}`,
          email: `never-signed-up-${i}@example.com`,
          code_hash: "h",
          link_hash: `l-${i}`,
          browser_hash: "b",
          attempts: 0,
          created_at: now - DAY,
          expires_at: now - 1,
          used_at: null,
        }));
        for (let i = 0; i < codes.length; i += 200) {
          await db
            .insertInto("sign_in_codes")
            .values(codes.slice(i, i + 200))
            .execute();
        }
        await db
          .insertInto("sign_in_codes")
          .values({ ...codes[0], id: "open", link_hash: "open", expires_at: now + 60_000 } as never)
          .execute();
        for (const [hash, expiresAt] of [
          ["old-device", now - 1],
          ["live-device", now + 60_000],
        ] as const) {
          await db
            .insertInto("device_codes")
            .values({
              device_hash: hash,
              user_code: hash,
              client_name: "x",
              client_address: null,
              status: "pending",
              account_id: null,
              created_at: now - DAY,
              expires_at: expiresAt,
              last_polled_at: null,
            })
            .execute();
        }
        for (const [hash, expiresAt] of [
          ["old-session", now - 1],
          ["live-session", now + DAY],
        ] as const) {
          await db
            .insertInto("web_sessions")
            .values({
              id_hash: hash,
              account_id: account.id,
              created_at: now - DAY,
              last_seen_at: now - DAY,
              expires_at: expiresAt,
            })
            .execute();
        }
        await db
          .insertInto("remembered_browsers")
          .values([
            { browser_hash: "old", email: "a@example.com", expires_at: now - 1 },
            { browser_hash: "live", email: "a@example.com", expires_at: now + DAY },
          ])
          .execute();
        await db
          .insertInto("rate_limits")
          .values([
            { key: "old", window_start: now - 2 * DAY, count: 1 },
            { key: "live", window_start: now - 60_000, count: 1 },
          ])
          .execute();

        // Hosts and agents: a day-old host never linked goes (and its agent); a day-old agent
        // never activated goes; an active one, and what is under a day old, stay.
        const host = (id: string, accountId: string | null, lastUsedAt: number) => ({
          id,
          account_id: accountId,
          name: null,
          thumbprint: id,
          public_jwk: "{}",
          status: accountId ? ("active" as const) : ("pending" as const),
          created_at: lastUsedAt,
          updated_at: lastUsedAt,
          last_used_at: lastUsedAt,
          revoked_at: null,
        });
        await db
          .insertInto("agent_hosts")
          .values([
            host("hst_linked", account.id, now - 2 * DAY),
            host("hst_new", null, now - 60_000),
            host("hst_stale", null, now - 2 * DAY),
          ])
          .execute();
        const agent = (id: string, hostId: string, createdAt: number, active: boolean) => ({
          id,
          host_id: hostId,
          account_id: active ? account.id : null,
          name: id,
          thumbprint: id,
          public_jwk: "{}",
          status: active ? ("active" as const) : ("pending" as const),
          created_at: createdAt,
          activated_at: active ? createdAt : null,
          last_used_at: null,
          revoked_at: null,
        });
        await db
          .insertInto("agents")
          .values([
            agent("agt_active", "hst_linked", now - 2 * DAY, true),
            agent("agt_stale", "hst_linked", now - 2 * DAY, false),
            agent("agt_waiting", "hst_new", now - 60_000, false),
          ])
          .execute();

        // Written as the service writes (`database.write`); nothing here caches what it deletes.
        const deleted = await purgeExpired({ write: (work) => work(db), engine }, now);
        assert.deepEqual(deleted, {
          sign_in_codes: PURGE_BATCH + 250,
          device_codes: 1,
          web_sessions: 1,
          remembered_browsers: 1,
          oauth_codes: 0,
          rate_limits: 1,
          key_changes: 0,
          oauth_clients: 0,
          instances: 0,
          agents: 1,
          agent_hosts: 1,
          audit_events: 0,
          usage_daily: 0,
          partner_activity: 0,
          departed_partner_activity: 0,
          user_keys: 0,
          partner_keys: 0,
          sealing_keys: 0,
        });
        const left = async (table: string, column: string) =>
          (
            await sql<{
              v: string;
            }>`SELECT ${sql.ref(column)} AS v FROM ${sql.table(table)} ORDER BY 1`.execute(db)
          ).rows.map((row) => row.v);
        assert.deepEqual(await left("sign_in_codes", "id"), ["open"]);
        assert.deepEqual(await left("device_codes", "device_hash"), ["live-device"]);
        assert.deepEqual(await left("web_sessions", "id_hash"), ["live-session"]);
        assert.deepEqual(await left("remembered_browsers", "browser_hash"), ["live"]);
        assert.deepEqual(await left("rate_limits", "key"), ["live"]);
        assert.deepEqual(await left("agents", "id"), ["agt_active", "agt_waiting"]);
        assert.deepEqual(await left("agent_hosts", "id"), ["hst_linked", "hst_new"]);
      } finally {
        await identity.close();
      }
    });

    it("deletes each batch through the index on its expiry, never by reading the whole table", async () => {
      const identity = await openTestIdentity(engine);
      const { db } = identity;
      try {
        // A few hundred thousand counters, most of them a day old: the statement a purge runs is
        // planned against a table of that size (with the delete by key it replaced, PostgreSQL
        // hash-joined every batch against a sequential scan of all 300,000).
        const old = identity.now() - 2 * DAY;
        const numbers =
          engine === "postgres"
            ? sql`SELECT i FROM generate_series(1, 300000) AS n(i)`
            : sql`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000)
                SELECT i FROM n`;
        // Seeded on a connection without the requests' 2 s deadline, which a busy machine passes.
        const seeding = openDatabase({
          databaseUrl: identity.database.databaseUrl,
          dataDir: identity.database.dataDir,
          fileName: "identity.sqlite",
          deadlineMs: 0,
        });
        await sql`INSERT INTO rate_limits (key, window_start, count)
          SELECT 'mints:' || i, CAST(${old} AS bigint) + i, 1 FROM (${numbers}) AS numbers`
          .execute(seeding.db)
          .finally(() => seeding.close());
        await sql`ANALYZE rate_limits`.execute(db);
        for (const { table, column, unlessSet, day } of EXPIRING) {
          const before = day ? "2026-01-01" : identity.now() - DAY;
          const statement = purgeBatch(engine, table, column, before, unlessSet);
          const plan = await planOf(engine, db, statement, { large: table === "rate_limits" });
          assert.doesNotMatch(plan, /Seq Scan|\bSCAN\b/, `${table}: ${plan}`);
          const byExpiry =
            engine === "sqlite"
              ? new RegExp(`USING (COVERING )?INDEX \\w+ \\(${column}<`)
              : new RegExp(`Index Cond: \\(${column} <`);
          assert.match(plan, byExpiry, `${table}: ${plan}`);
        }
        const deleted = await purgeExpired({ write: (work) => work(db), engine }, identity.now());
        assert.ok((deleted.rate_limits ?? 0) > 0);
        // The service's own purge, 5 s after it starts, may have taken some of them first on a
        // busy machine: what counts is that none is left.
        const left = await sql<{
          n: number | string;
        }>`SELECT count(*) AS n FROM rate_limits`.execute(db);
        assert.equal(Number(left.rows[0]?.n), 0);
      } finally {
        await identity.close();
      }
    });
  });
}

/**
 * The plan of `statement` as text. The small tables are planned with sequential scans disabled
 * (at a few rows a scan is the cheaper plan, and says nothing of a large table); a large one is
 * planned as it is.
 */
async function planOf(
  engine: "sqlite" | "postgres",
  db: Kysely<IdentityDatabase>,
  statement: RawBuilder<unknown>,
  options: { large: boolean },
): Promise<string> {
  if (engine === "sqlite") {
    const rows = await sql<{ detail: string }>`EXPLAIN QUERY PLAN ${statement}`.execute(db);
    return rows.rows.map((row) => row.detail).join("\n");
  }
  return db.transaction().execute(async (trx) => {
    if (!options.large) await sql`SET LOCAL enable_seqscan = off`.execute(trx);
    const rows = await sql<{ "QUERY PLAN": string }>`EXPLAIN ${statement}`.execute(trx);
    return rows.rows.map((row) => row["QUERY PLAN"]).join("\n");
  });
}
