import { type Migration, sql } from "kysely";
import type { AnyDb } from "./any-db.ts";

/** Sign-in by email code, browser sessions, device login and usage counters. */
export const dashboardMigration: Migration = {
  async up(db: AnyDb) {
    await sql`CREATE TABLE sign_in_codes (
      id text PRIMARY KEY,
      email text NOT NULL,
      code_hash text NOT NULL,
      link_hash text NOT NULL UNIQUE,
      browser_hash text NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      created_at bigint NOT NULL,
      expires_at bigint NOT NULL,
      used_at bigint
    )`.execute(db);
    await sql`CREATE INDEX sign_in_codes_browser ON sign_in_codes (browser_hash, created_at)`.execute(
      db,
    );
    await sql`CREATE TABLE web_sessions (
      id_hash text PRIMARY KEY,
      account_id text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      created_at bigint NOT NULL,
      last_seen_at bigint NOT NULL,
      expires_at bigint NOT NULL
    )`.execute(db);
    await sql`CREATE INDEX web_sessions_account ON web_sessions (account_id)`.execute(db);
    await sql`CREATE TABLE device_codes (
      device_hash text PRIMARY KEY,
      user_code text NOT NULL UNIQUE,
      client_name text NOT NULL,
      status text NOT NULL,
      account_id text REFERENCES accounts(id) ON DELETE CASCADE,
      created_at bigint NOT NULL,
      expires_at bigint NOT NULL,
      last_polled_at bigint
    )`.execute(db);
    await sql`CREATE TABLE usage_daily (
      partner_id text NOT NULL REFERENCES partners(id) ON DELETE CASCADE,
      day text NOT NULL,
      outcome text NOT NULL,
      count bigint NOT NULL,
      PRIMARY KEY (partner_id, day, outcome)
    )`.execute(db);
    await sql`CREATE TABLE partner_activity (
      account_id text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      partner_id text NOT NULL REFERENCES partners(id) ON DELETE CASCADE,
      first_at bigint NOT NULL,
      last_at bigint NOT NULL,
      count bigint NOT NULL,
      PRIMARY KEY (account_id, partner_id)
    )`.execute(db);
    await sql`CREATE TABLE rate_limits (
      key text PRIMARY KEY,
      window_start bigint NOT NULL,
      count integer NOT NULL
    )`.execute(db);
  },
};
