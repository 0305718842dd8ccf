import { sql } from "kysely";
import type { AnyDb } from "./any-db.ts";

/**
 * Migration 0019, capabilities (Agent Auth Protocol sections 2.12, 2.13, 3.3): what partners
 * offer agents, each executed at a location of the partner's own, and each agent's grants of
 * them with the constraints its person approved. A capability's name is one partner's across
 * the service. A grant names its capability by name, not by key: a capability its partner
 * withdraws leaves its grants inoperative (section 2.12), and declaring it again revives them.
 * Expand only: new tables, so the release before runs beside this one.
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
}
