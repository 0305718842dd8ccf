import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { sql } from "kysely";
import { PURGE_BATCH, purgeExpired } from "../src/store/purge.ts";
import { openTestIdentity } from "./support/harness.ts";

const DAY = 24 * 60 * 60 * 1000;

for (const engine of testEngines()) {
  describe(`expired rows are purged, off the request path (${engine})`, () => {
    it("deletes every expired sign-in code, device code, session, remembered browser and old counter, in batches, and keeps the rest", async () => {
      const identity = await openTestIdentity(engine);
      const { db } = identity.ctx.store;
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

        // Written as the service writes (`database.write`); nothing here caches what it deletes.
        const deleted = await purgeExpired({ write: (work) => work(db) }, now);
        assert.deepEqual(deleted, {
          sign_in_codes: PURGE_BATCH + 250,
          device_codes: 1,
          web_sessions: 1,
          remembered_browsers: 1,
          rate_limits: 1,
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
      } finally {
        await identity.close();
      }
    });

    it("finds what expired through an index, never by reading the whole table", async () => {
      const identity = await openTestIdentity(engine);
      const { db } = identity.ctx.store;
      try {
        for (const [table, column] of [
          ["sign_in_codes", "expires_at"],
          ["device_codes", "expires_at"],
          ["web_sessions", "expires_at"],
          ["remembered_browsers", "expires_at"],
          ["rate_limits", "window_start"],
        ] as const) {
          const query = sql`SELECT 1 FROM ${sql.table(table)} WHERE ${sql.ref(column)} < 5 LIMIT 1000`;
          let plan: string;
          if (engine === "sqlite") {
            const rows = await sql<{ detail: string }>`EXPLAIN QUERY PLAN ${query}`.execute(db);
            plan = rows.rows.map((row) => row.detail).join("\n");
          } else {
            await sql`SET enable_seqscan = off`.execute(db);
            const rows = await sql<{ "QUERY PLAN": string }>`EXPLAIN ${query}`.execute(db);
            plan = rows.rows.map((row) => row["QUERY PLAN"]).join("\n");
          }
          const byExpiry =
            engine === "sqlite"
              ? new RegExp(`USING (COVERING )?INDEX \\w+ \\(${column}<`)
              : new RegExp(`Index Cond: \\(${column} <`);
          assert.match(plan, byExpiry, `${table}: ${plan}`);
        }
      } finally {
        await identity.close();
      }
    });
  });
}
