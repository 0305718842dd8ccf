import { sql } from "kysely";
import type { AnyDb } from "./any-db.ts";

/**
 * Migration 0008, OAuth: the clients that registered (RFC 7591), the authorization codes waiting
 * for their token request, the resource URLs partners answer for (RFC 8707), and on each user
 * key the client that obtained it, the partner its tokens are bound to, and whether it rotates
 * (a refresh token of a public client in a browser flow) and what replaced it. Expand only: the
 * columns are nullable or defaulted, so the release before this one runs beside it.
 */
export async function createOAuthTables(db: AnyDb): Promise<void> {
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
  await sql`CREATE INDEX partner_resources_partner ON partner_resources (partner_id)`.execute(db);
}
