import type { Engine } from "@agentpass/db";
import { type Migration, sql } from "kysely";
import { createCapabilityTables } from "./migrations/agent-capabilities.ts";
import { createAgentTables } from "./migrations/agents.ts";
import type { AnyDb } from "./migrations/any-db.ts";
import { createAuditEvents } from "./migrations/audit-events.ts";
import { foldAuditRepeats } from "./migrations/audit-folding.ts";
import { createCoreTables } from "./migrations/core-tables.ts";
import { dashboardMigration } from "./migrations/dashboard-tables.ts";
import { prepareDataLifecycle } from "./migrations/data-lifecycle.ts";
import { keepDepartedPartnerActivity } from "./migrations/departed-partner-activity.ts";
import { createKeyChangeLog } from "./migrations/key-change-triggers.ts";
import { keyEpochMigration } from "./migrations/key-epoch.ts";
import { createOAuthTables } from "./migrations/oauth-tables.ts";
import {
  wrappedSealingKeysPostgres,
  wrappedSealingKeysSqlite,
} from "./migrations/wrapped-sealing-keys.ts";

/**
 * Forward-only migrations of the identity database, applied in name order at start-up. The list
 * is here, in order; a long migration's body is a function of its own under `migrations/`.
 */
export const identityMigrations = (engine: Engine): Record<string, Migration> => ({
  "0001_core": { up: (db: AnyDb) => createCoreTables(db) },
  "0002_dashboard": { up: (db) => dashboardMigration.up(db) },
  "0003_key_epoch": {
    async up(db: AnyDb) {
      if (engine === "postgres") await keyEpochMigration(db);
    },
  },
  "0004_unlogged_rate_limits": {
    // PostgreSQL only: rate-limit counters live a minute and are written on every mint and
    // failed verification, so each write waited for a WAL flush (mint with one key, two A/B
    // pairs: ~9,600 -> ~11,000 requests/s unlogged). The cost is the counts of the current window: a PostgreSQL
    // crash (not a clean restart) or a failover to a replica starts them again from zero.
    async up(db: AnyDb) {
      if (engine === "postgres") await sql`ALTER TABLE rate_limits SET UNLOGGED`.execute(db);
    },
  },
  "0005_wrapped_sealing_keys": {
    async up(db: AnyDb) {
      if (engine === "postgres") await wrappedSealingKeysPostgres(db);
      else await wrappedSealingKeysSqlite(db);
    },
  },
  "0006_abuse_defences": {
    // Where a device login was started, shown to the person who approves it; the browsers each
    // address signed in with, which strangers' requests for codes cannot lock out; and the
    // indexes that let expired rows be purged in small batches instead of by scanning a table.
    async up(db: AnyDb) {
      await sql`ALTER TABLE device_codes ADD COLUMN client_address text`.execute(db);
      await sql`CREATE TABLE remembered_browsers (
        browser_hash text NOT NULL,
        email text NOT NULL,
        expires_at bigint NOT NULL,
        PRIMARY KEY (browser_hash, email)
      )`.execute(db);
      await sql`CREATE INDEX remembered_browsers_expires ON remembered_browsers (expires_at)`.execute(
        db,
      );
      for (const table of ["sign_in_codes", "device_codes", "web_sessions"]) {
        await sql`CREATE INDEX ${sql.raw(`${table}_expires`)} ON ${sql.raw(table)} (expires_at)`.execute(
          db,
        );
      }
      await sql`CREATE INDEX rate_limits_window ON rate_limits (window_start)`.execute(db);
    },
  },
  "0007_partner_site_verification": {
    // A partner proves it controls its website by publishing its token there: the token, and
    // when and for which origin the last check succeeded (null: not verified).
    async up(db: AnyDb) {
      await sql`ALTER TABLE partners ADD COLUMN site_token text`.execute(db);
      await sql`ALTER TABLE partners ADD COLUMN site_verified_at bigint`.execute(db);
      await sql`ALTER TABLE partners ADD COLUMN site_verified_origin text`.execute(db);
    },
  },
  "0008_oauth": { up: (db: AnyDb) => createOAuthTables(db) },
  "0009_key_changes": { up: (db: AnyDb) => createKeyChangeLog(db, engine) },
  "0010_departed_partner_activity": {
    up: (db: AnyDb) => keepDepartedPartnerActivity(db, engine),
  },
  "0011_grants": {
    // A grant (a consent, an approved device login) is its user key row, which session tokens
    // name and whose revocation every instance sees on the next request, plus this row: what the
    // person is shown, and the refresh-token family's state, rotated in place (domain/grants.ts).
    // Each chain of rotated keys becomes one grant: its live head stays, with the refresh token
    // its client holds as the family's generation 0; the replaced keys go. Not watched by the
    // key-change triggers: a rotation changes no cached read.
    async up(db: AnyDb) {
      await sql`CREATE TABLE grants (
        key_id text PRIMARY KEY REFERENCES user_keys(id) ON DELETE CASCADE,
        client_name text NOT NULL,
        client_verified integer NOT NULL,
        created_from text,
        family_hash text,
        refresh_hash text,
        generation integer NOT NULL DEFAULT 0,
        rotated_at bigint
      )`.execute(db);
      await sql`DELETE FROM user_keys WHERE rotating = 1 AND replaced_by IS NOT NULL`.execute(db);
      await sql`INSERT INTO grants (key_id, client_name, client_verified)
        SELECT k.id,
          CASE WHEN k.client_id = 'agentpass-cli' THEN k.name
            ELSE coalesce(c.client_name, k.client_id) END,
          0
        FROM user_keys k LEFT JOIN oauth_clients c ON c.client_id = k.client_id
        WHERE k.client_id IS NOT NULL`.execute(db);
      // The name of the client a code was given to, for the grant its redemption makes.
      await sql`ALTER TABLE oauth_codes ADD COLUMN client_name text`.execute(db);
    },
  },
  "0012_short_code_hmac": {
    // Short codes (a 6-digit sign-in code, an 8-letter device user code) are stored as an HMAC
    // under a key derived from the service's secret, which is not in the database: a copy of it
    // opens nothing. This migration has no secret, so it cannot compute one; the codes it finds
    // live 10 minutes, so it ends them. Every sign-in code goes (the pending ones could not be
    // redeemed by this release; a used one is kept for nothing). Device logins still pending go;
    // the others (approved, waiting for their device; denied; consumed) are kept, their code
    // overwritten by their device hash. Expand only: the release before still reads and writes
    // `user_code` (NOT NULL UNIQUE), which this release fills with the device hash.
    async up(db: AnyDb) {
      await sql`DELETE FROM sign_in_codes`.execute(db);
      await sql`DELETE FROM device_codes WHERE status = 'pending'`.execute(db);
      await sql`UPDATE device_codes SET user_code = device_hash`.execute(db);
      await sql`ALTER TABLE device_codes ADD COLUMN user_code_hash text`.execute(db);
      await sql`CREATE UNIQUE INDEX device_codes_user_code_hash
        ON device_codes (user_code_hash)`.execute(db);
    },
  },
  "0013_client_use": {
    // When a code was last issued to a registered client (RFC 7591); a client never given one is
    // deleted a day after it registered, found through the partial index. A client whose codes
    // gave keys, or that has a code waiting, counts as used from the start. Expand only: the
    // release before does not know the column, and its registrations purge like any unused one.
    async up(db: AnyDb) {
      await sql`ALTER TABLE oauth_clients ADD COLUMN last_used_at bigint`.execute(db);
      await sql`UPDATE oauth_clients SET last_used_at = created_at
        WHERE client_id IN (SELECT client_id FROM user_keys WHERE client_id IS NOT NULL)
          OR client_id IN (SELECT client_id FROM oauth_codes)`.execute(db);
      await sql`CREATE INDEX oauth_clients_unused ON oauth_clients (created_at)
        WHERE last_used_at IS NULL`.execute(db);
    },
  },
  "0014_audit_events": { up: (db: AnyDb) => createAuditEvents(db, engine) },
  "0015_data_lifecycle": { up: (db: AnyDb) => prepareDataLifecycle(db, engine) },
  "0016_audit_folding": { up: (db: AnyDb) => foldAuditRepeats(db) },
  "0017_dpop_binding": {
    // RFC 9449: the thumbprint of the key a code (`dpop_jkt` at consent) and a grant's key (its
    // refresh token) are bound to, and whether a registered client asked for bound tokens only.
    // On the key row, read with the key (cached): a bound key refreshes and mints with its proof
    // only. Expand only: the columns are nullable or defaulted, so the release before runs beside
    // this one (it ignores the binding, which is why a release that binds is not rolled back past).
    async up(db: AnyDb) {
      await sql`ALTER TABLE user_keys ADD COLUMN dpop_jkt text`.execute(db);
      await sql`ALTER TABLE oauth_codes ADD COLUMN dpop_jkt text`.execute(db);
      await sql`ALTER TABLE oauth_clients ADD COLUMN dpop_bound integer NOT NULL DEFAULT 0`.execute(
        db,
      );
    },
  },
  "0018_agents": { up: (db: AnyDb) => createAgentTables(db) },
  "0019_agent_capabilities": { up: (db: AnyDb) => createCapabilityTables(db) },
});
