import { sql } from "kysely";
import type { AnyDb } from "./any-db.ts";

/**
 * Migration 0018, agents (the Agent Auth Protocol's model): a person's hosts (a client
 * environment with its own Ed25519 key, known by the key's RFC 7638 thumbprint), the agents
 * registered under them (each its own key), which partners saw which agent, and on a device
 * code the agent its approval activates. Public keys only: private keys never reach the service.
 * Expand only: new tables and a nullable column, so the release before runs beside this one.
 */
export async function createAgentTables(db: AnyDb): Promise<void> {
  await sql`CREATE TABLE agent_hosts (
    id text PRIMARY KEY,
    account_id text REFERENCES accounts(id) ON DELETE CASCADE,
    name text,
    thumbprint text NOT NULL UNIQUE,
    public_jwk text NOT NULL,
    status text NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    last_used_at bigint,
    revoked_at bigint
  )`.execute(db);
  await sql`CREATE INDEX agent_hosts_account ON agent_hosts (account_id)`.execute(db);
  await sql`CREATE TABLE agents (
    id text PRIMARY KEY,
    host_id text NOT NULL REFERENCES agent_hosts(id) ON DELETE CASCADE,
    account_id text REFERENCES accounts(id) ON DELETE CASCADE,
    name text NOT NULL,
    thumbprint text NOT NULL,
    public_jwk text NOT NULL,
    status text NOT NULL,
    created_at bigint NOT NULL,
    activated_at bigint,
    last_used_at bigint,
    revoked_at bigint,
    UNIQUE (host_id, thumbprint)
  )`.execute(db);
  await sql`CREATE INDEX agents_account ON agents (account_id)`.execute(db);
  await sql`CREATE TABLE agent_activity (
    agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    partner_id text NOT NULL REFERENCES partners(id) ON DELETE CASCADE,
    first_at bigint NOT NULL,
    last_at bigint NOT NULL,
    count bigint NOT NULL,
    PRIMARY KEY (agent_id, partner_id)
  )`.execute(db);
  await sql`CREATE INDEX agent_activity_partner ON agent_activity (partner_id)`.execute(db);
  await sql`ALTER TABLE device_codes ADD COLUMN agent_id text`.execute(db);
}
