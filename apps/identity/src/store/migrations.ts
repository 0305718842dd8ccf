import type { Engine } from "@agentpass/db";
import { type CreateTableBuilder, type Kysely, type Migration, sql } from "kysely";

// biome-ignore lint/suspicious/noExplicitAny: migrations describe the schema before it is typed.
type AnyDb = Kysely<any>;

/** Forward-only migrations of the identity database, applied in name order at start-up. */
export const identityMigrations = (engine: Engine): Record<string, Migration> => ({
  "0001_core": {
    async up(db: AnyDb) {
      await db.schema
        .createTable("accounts")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("email", "text", (c) => c.notNull().unique())
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .execute();
      await db.schema
        .createTable("user_keys")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("account_id", "text", (c) =>
          c.notNull().references("accounts.id").onDelete("cascade"),
        )
        .$call(addKeyColumns)
        .execute();
      await db.schema
        .createIndex("user_keys_account")
        .on("user_keys")
        .column("account_id")
        .execute();
      await db.schema
        .createTable("partners")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("owner_account_id", "text", (c) =>
          c.notNull().references("accounts.id").onDelete("cascade"),
        )
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("website", "text")
        .addColumn("description", "text")
        .addColumn("listed", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex("partners_owner")
        .on("partners")
        .column("owner_account_id")
        .execute();
      await db.schema
        .createTable("partner_keys")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("partner_id", "text", (c) =>
          c.notNull().references("partners.id").onDelete("cascade"),
        )
        .$call(addKeyColumns)
        .execute();
      await db.schema
        .createIndex("partner_keys_partner")
        .on("partner_keys")
        .column("partner_id")
        .execute();
      await db.schema
        .createTable("sealing_keys")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("secret", "text", (c) => c.notNull())
        .addColumn("created_at", "bigint", (c) => c.notNull())
        .execute();
    },
  },
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
  "0008_oauth": {
    // OAuth: the clients that registered (RFC 7591), the authorization codes waiting for their
    // token request, the resource URLs partners answer for (RFC 8707), and on each user key the
    // client that obtained it, the partner its tokens are bound to, and whether it rotates (a
    // refresh token of a public client in a browser flow) and what replaced it. Expand only:
    // the columns are nullable or defaulted, so the release before this one runs beside it.
    async up(db: AnyDb) {
      await sql`ALTER TABLE user_keys ADD COLUMN client_id text`.execute(db);
      await sql`ALTER TABLE user_keys ADD COLUMN audience text`.execute(db);
      await sql`ALTER TABLE user_keys ADD COLUMN rotating integer NOT NULL DEFAULT 0`.execute(db);
      await sql`ALTER TABLE user_keys ADD COLUMN replaced_by text`.execute(db);
      await sql`CREATE TABLE oauth_clients (
        client_id text PRIMARY KEY,
        client_name text NOT NULL,
        redirect_uris text NOT NULL,
        created_at bigint NOT NULL
      )`.execute(db);
      await sql`CREATE TABLE oauth_codes (
        code_hash text PRIMARY KEY,
        client_id text NOT NULL,
        account_id text NOT NULL,
        redirect_uri text NOT NULL,
        code_challenge text NOT NULL,
        partner_id text,
        scope text,
        expires_at bigint NOT NULL,
        used_at bigint,
        key_id text
      )`.execute(db);
      await sql`CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at)`.execute(db);
      await sql`CREATE TABLE partner_resources (
        url text PRIMARY KEY,
        partner_id text NOT NULL,
        created_at bigint NOT NULL
      )`.execute(db);
      await sql`CREATE INDEX partner_resources_partner ON partner_resources (partner_id)`.execute(
        db,
      );
    },
  },
  "0009_key_changes": {
    // Which keys changed, so that an instance drops those keys' cached reads instead of all of
    // them (store/key-changes.ts). Written by triggers, so a change made by any release, the
    // admin CLI or by hand is listed; it only adds, so the release before runs beside it.
    async up(db: AnyDb) {
      if (engine === "sqlite") {
        await sql`CREATE TABLE key_epoch (
          id integer PRIMARY KEY CHECK (id = 1),
          value bigint NOT NULL
        )`.execute(db);
        await sql`INSERT INTO key_epoch (id, value) VALUES (1, 0)`.execute(db);
      }
      await sql`CREATE TABLE key_changes (
        epoch bigint PRIMARY KEY,
        table_name text NOT NULL,
        row_id text NOT NULL,
        secret_hash text,
        at bigint NOT NULL
      )`.execute(db);
      await sql`CREATE INDEX key_changes_at ON key_changes (at)`.execute(db);
      if (engine === "postgres") await keyChangesPostgres(db);
      else await keyChangesSqlite(db);
    },
  },
  "0010_departed_partner_activity": {
    // A person's record that a partner learned their email outlives the partner: a partner
    // deleted (by its owner, or with its owner's account) leaves each person's row here, with
    // its name and website as they were. Copied by a trigger, so every way of deleting a partner
    // keeps it, the release before included; it only adds, so that release runs beside it.
    async up(db: AnyDb) {
      await sql`CREATE TABLE departed_partner_activity (
        account_id text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        partner_id text NOT NULL,
        name text NOT NULL,
        website text,
        first_at bigint NOT NULL,
        last_at bigint NOT NULL,
        count bigint NOT NULL,
        deleted_at bigint NOT NULL,
        PRIMARY KEY (account_id, partner_id)
      )`.execute(db);
      // Rows of an account being deleted in the same statement (the partner's owner) are not
      // kept: the account is already gone when its partners' rows are deleted.
      const keep = (now: string) =>
        sql.raw(`INSERT INTO departed_partner_activity
          (account_id, partner_id, name, website, first_at, last_at, count, deleted_at)
        SELECT a.account_id, OLD.id, OLD.name, OLD.website, a.first_at, a.last_at, a.count, ${now}
        FROM partner_activity a
        WHERE a.partner_id = OLD.id
          AND EXISTS (SELECT 1 FROM accounts WHERE accounts.id = a.account_id);`);
      if (engine === "sqlite") {
        await sql`CREATE TRIGGER partners_keep_activity BEFORE DELETE ON partners BEGIN
          ${keep("CAST(unixepoch('subsec') * 1000 AS INTEGER)")}
        END`.execute(db);
        return;
      }
      await sql`CREATE FUNCTION keep_partner_activity() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          ${keep("(extract(epoch FROM clock_timestamp()) * 1000)::bigint")}
          RETURN OLD;
        END
      $$`.execute(db);
      await sql`CREATE TRIGGER partners_keep_activity BEFORE DELETE ON partners
        FOR EACH ROW EXECUTE FUNCTION keep_partner_activity()`.execute(db);
    },
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
});

/**
 * PostgreSQL: `bump_key_epoch` (migration 0003, run by the key tables' deferred triggers at
 * commit) also lists each changed row in `key_changes` under the epoch its bump made. The bumps
 * of one transaction hold `key_epoch`'s row lock until it commits, so epochs follow the commit
 * order with no gap: a reader that sees epoch E sees every change up to E, and a missing one
 * means the log was pruned. An update lists the row as it was too when its id or hash changed.
 * The key tables' triggers now fire on an update of any column, so a column a later release
 * caches is covered, and the function skips an update that changed only `last_used_at` (the
 * batched key-use times, which no cached read returns).
 */
async function keyChangesPostgres(db: AnyDb): Promise<void> {
  await sql`CREATE OR REPLACE FUNCTION bump_key_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      changed jsonb;
      position bigint;
    BEGIN
      IF TG_OP = 'UPDATE'
        AND (to_jsonb(OLD) - 'last_used_at') = (to_jsonb(NEW) - 'last_used_at') THEN
        RETURN NULL;
      END IF;
      FOREACH changed IN ARRAY ARRAY[
        CASE WHEN TG_OP = 'DELETE' OR (TG_OP = 'UPDATE'
          AND (to_jsonb(OLD)->>'id', to_jsonb(OLD)->>'secret_hash')
            IS DISTINCT FROM (to_jsonb(NEW)->>'id', to_jsonb(NEW)->>'secret_hash'))
        THEN to_jsonb(OLD) END,
        CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END
      ] LOOP
        CONTINUE WHEN changed IS NULL;
        UPDATE key_epoch SET value = value + 1 WHERE id = 1 RETURNING value INTO position;
        INSERT INTO key_changes (epoch, table_name, row_id, secret_hash, at)
        VALUES (position, TG_TABLE_NAME, changed->>'id', changed->>'secret_hash',
          (extract(epoch FROM now()) * 1000)::bigint);
      END LOOP;
      RETURN NULL;
    END
  $$`.execute(db);
  for (const table of ["user_keys", "partner_keys"]) {
    const trigger = sql.raw(`${table}_key_epoch`);
    await sql`DROP TRIGGER ${trigger} ON ${sql.raw(table)}`.execute(db);
    await sql`CREATE CONSTRAINT TRIGGER ${trigger}
      AFTER INSERT OR DELETE OR UPDATE ON ${sql.raw(table)} DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION bump_key_epoch()`.execute(db);
  }
}

/**
 * SQLite: the same log, written by plain triggers (one writer at a time, so epochs follow the
 * commit order here too). A row inserted or updated is listed as it is; a row deleted, or
 * updated away from its id or hash, as it was. Accounts are listed when changed or deleted. An
 * update of the key tables is listed unless it sets only `last_used_at`: the update triggers
 * name every other column the table has now, so a migration that adds a column to a key table
 * creates them again.
 */
async function keyChangesSqlite(db: AnyDb): Promise<void> {
  const watched = [
    { table: "user_keys", hash: true },
    { table: "partner_keys", hash: true },
    { table: "accounts", hash: false, inserts: false },
    { table: "sealing_keys", hash: false },
  ];
  for (const { table, hash, inserts = true } of watched) {
    const { rows } = await sql<{ name: string }>`SELECT name FROM pragma_table_info(${table})
      WHERE name <> 'last_used_at' AND (${table} <> 'accounts' OR name <> 'created_at')`.execute(
      db,
    );
    const columns = rows.map((row) => row.name).join(", ");
    const list = (row: "OLD" | "NEW", when = "") =>
      sql.raw(`UPDATE key_epoch SET value = value + 1 WHERE id = 1 ${when};
        INSERT INTO key_changes (epoch, table_name, row_id, secret_hash, at)
        SELECT value, '${table}', ${row}.id, ${hash ? `${row}.secret_hash` : "NULL"},
          CAST(unixepoch('subsec') * 1000 AS INTEGER)
        FROM key_epoch WHERE id = 1 ${when};`);
    const moved = hash
      ? "AND (OLD.id IS NOT NEW.id OR OLD.secret_hash IS NOT NEW.secret_hash)"
      : "AND OLD.id IS NOT NEW.id";
    const trigger = (event: string) => sql.raw(`${table}_${event}_change`);
    if (inserts) {
      await sql`CREATE TRIGGER ${trigger("insert")} AFTER INSERT ON ${sql.raw(table)}
        BEGIN ${list("NEW")} END`.execute(db);
    }
    await sql`CREATE TRIGGER ${trigger("update")} AFTER UPDATE OF ${sql.raw(columns)}
      ON ${sql.raw(table)} BEGIN ${list("OLD", moved)} ${list("NEW")} END`.execute(db);
    await sql`CREATE TRIGGER ${trigger("delete")} AFTER DELETE ON ${sql.raw(table)}
      BEGIN ${list("OLD")} END`.execute(db);
  }
}

/**
 * Sealing keys are kept wrapped under a key-encryption key that is not in the database
 * (`wrapped`); `secret`, the key in clear, becomes nullable and is erased by the first start
 * that has the secret (`loadSealingKeys`), which this migration cannot do: it has no KEK. A row
 * holds exactly one of the two. On PostgreSQL a change of the keys bumps `key_epoch`, so every
 * instance re-reads them on its next request (a rotation by the admin CLI).
 */
async function wrappedSealingKeysPostgres(db: AnyDb): Promise<void> {
  await sql`ALTER TABLE sealing_keys ALTER COLUMN secret DROP NOT NULL`.execute(db);
  await sql`ALTER TABLE sealing_keys ADD COLUMN wrapped text`.execute(db);
  await sql`ALTER TABLE sealing_keys ADD CONSTRAINT sealing_keys_one_form
    CHECK ((secret IS NULL) <> (wrapped IS NULL))`.execute(db);
  await sql`CREATE CONSTRAINT TRIGGER sealing_keys_key_epoch
    AFTER INSERT OR DELETE OR UPDATE ON sealing_keys DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION bump_key_epoch()`.execute(db);
}

/** SQLite cannot drop a NOT NULL by ALTER: the (small) table is built again. */
async function wrappedSealingKeysSqlite(db: AnyDb): Promise<void> {
  await sql`CREATE TABLE sealing_keys_0005 (
    id text PRIMARY KEY,
    secret text,
    wrapped text,
    created_at bigint NOT NULL,
    CHECK ((secret IS NULL) <> (wrapped IS NULL))
  )`.execute(db);
  await sql`INSERT INTO sealing_keys_0005 (id, secret, created_at)
    SELECT id, secret, created_at FROM sealing_keys`.execute(db);
  await sql`DROP TABLE sealing_keys`.execute(db);
  await sql`ALTER TABLE sealing_keys_0005 RENAME TO sealing_keys`.execute(db);
}

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

/**
 * PostgreSQL only: a counter bumped in the same transaction as any change that could alter a
 * cached verify or mint read (a key created, revoked, re-owned or deleted; an account's email
 * changed or the account deleted — its keys' deletion cascades). Instances read it before they
 * trust their key caches (`createReadCaches`, `@agentpass/db`). The triggers are deferred to commit, so the
 * counter's row lock is always the last lock a transaction takes and cannot join a deadlock.
 * Updates of `last_used_at` do not bump it. SQLite needs none: `PRAGMA data_version` tells.
 */
async function keyEpochMigration(db: AnyDb): Promise<void> {
  await sql`CREATE TABLE key_epoch (
    id integer PRIMARY KEY CHECK (id = 1),
    value bigint NOT NULL
  )`.execute(db);
  await sql`INSERT INTO key_epoch (id, value) VALUES (1, 0)`.execute(db);
  await sql`CREATE FUNCTION bump_key_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE key_epoch SET value = value + 1 WHERE id = 1;
      RETURN NULL;
    END
  $$`.execute(db);
  const triggers = [
    sql`CONSTRAINT TRIGGER user_keys_key_epoch
      AFTER INSERT OR DELETE OR UPDATE OF secret_hash, revoked_at, account_id ON user_keys`,
    sql`CONSTRAINT TRIGGER partner_keys_key_epoch
      AFTER INSERT OR DELETE OR UPDATE OF secret_hash, revoked_at, partner_id ON partner_keys`,
    sql`CONSTRAINT TRIGGER accounts_key_epoch AFTER DELETE OR UPDATE OF id, email ON accounts`,
  ];
  for (const trigger of triggers) {
    await sql`CREATE ${trigger} DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION bump_key_epoch()`.execute(db);
  }
}

function addKeyColumns<T extends string>(table: CreateTableBuilder<T>): CreateTableBuilder<T> {
  return table
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("display_prefix", "text", (c) => c.notNull())
    .addColumn("secret_hash", "text", (c) => c.notNull().unique())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("last_used_at", "bigint")
    .addColumn("revoked_at", "bigint");
}
