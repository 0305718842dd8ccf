import { sql } from "kysely";
import type { AnyDb } from "./any-db.ts";

/**
 * Migration 0019, capabilities (Agent Auth Protocol sections 2.12, 2.13, 3.3): what partners
 * offer agents, each executed at a location of the partner's own, and each agent's grants of
 * them with the constraints its person approved. A capability's name is one partner's across
 * the service. A grant names its capability by name, not by key: a capability its partner
 * withdraws leaves its grants inoperative (section 2.12), and declaring it again revives them.
 * Also the indexes the purge of agents never activated reads. Expand only: new tables and
 * indexes, so the release before runs beside this one.
 */
export async function createCapabilityTables(db: AnyDb): Promise<void> {
  await sql`CREATE TABLE partner_capabilities (
    name text PRIMARY KEY,
    partner_id text NOT NULL REFERENCES partners(id) ON DELETE CASCADE,
    description text NOT NULL,
    location text NOT NULL,
    input_schema text,
    output_schema text,
    updated_at bigint NOT NULL
  )`.execute(db);
  await sql`CREATE INDEX partner_capabilities_partner ON partner_capabilities (partner_id)`.execute(
    db,
  );
  await sql`CREATE TABLE agent_grants (
    agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    capability text NOT NULL,
    status text NOT NULL,
    constraints text,
    reason text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (agent_id, capability)
  )`.execute(db);
  // What the purge of agents never activated and hosts never linked reads (`purge.ts`).
  await sql`CREATE INDEX agents_never_active ON agents (created_at)
    WHERE activated_at IS NULL`.execute(db);
  await sql`CREATE INDEX agent_hosts_unlinked ON agent_hosts (last_used_at)
    WHERE account_id IS NULL`.execute(db);
  // The index by person leaves unlinked hosts out, so that their purge reads the index above
  // (SQLite would take this one for `account_id IS NULL`); a lookup by person still uses it.
  await sql`DROP INDEX agent_hosts_account`.execute(db);
  await sql`CREATE INDEX agent_hosts_account ON agent_hosts (account_id)
    WHERE account_id IS NOT NULL`.execute(db);
}
