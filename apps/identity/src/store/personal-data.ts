import type { IdentityDatabase } from "./schema.ts";

type TableName = keyof IdentityDatabase;

/** How deleting an account removes a table's rows. */
export type Deletion =
  /** The account's own row, deleted last. */
  | { kind: "account" }
  /** A foreign key to `from` with `ON DELETE CASCADE`: they go with the row they hang on. */
  | { kind: "cascade"; from: TableName }
  /** The trigger `trigger` on deleting from `from` (a row that may outlive its owner by design). */
  | { kind: "trigger"; from: TableName; trigger: string }
  /** No foreign key reaches them: `deleteAccount` deletes those whose `column` names the account. */
  | { kind: "column"; column: "account_id" | "email" }
  /** Kept after the account is gone, for `reason` (docs/operations.md, "Data lifecycle"). */
  | { kind: "kept"; reason: string };

/** A table that holds a person's data: how a row is tied to the account, deleted, exported. */
export interface PersonalTable {
  /** How a row names the account, for a reader. */
  tiedBy: string;
  deletion: Deletion;
  /** The sections of `agentpass-server accounts export` that hold its rows (`AccountRecord`). */
  exportedIn: readonly string[];
}

/**
 * Every table that holds a person's data, each with how it is tied to an account, how deleting
 * the account removes it and where an export shows it: the one list account deletion
 * (`account-store.ts`) and export (`operator-store.ts`'s `AccountRecord`) are built from.
 * test/personal-data.test.ts scans the live schema on each engine: every table must be listed
 * here or in `NOT_PERSONAL_TABLES`; one that names an account, or hangs on one that does (a
 * foreign key, or a `<name>_id` column of a table `<name>s`), here; and every cascade, trigger
 * and column named here must exist.
 */
export const PERSONAL_TABLES = {
  accounts: { tiedBy: "id, email", deletion: { kind: "account" }, exportedIn: ["account"] },
  user_keys: {
    tiedBy: "account_id",
    deletion: { kind: "cascade", from: "accounts" },
    exportedIn: ["user_keys", "grants"],
  },
  grants: {
    tiedBy: "key_id → user_keys.account_id",
    deletion: { kind: "cascade", from: "user_keys" },
    exportedIn: ["grants"],
  },
  web_sessions: {
    tiedBy: "account_id",
    deletion: { kind: "cascade", from: "accounts" },
    exportedIn: ["web_sessions"],
  },
  partners: {
    tiedBy: "owner_account_id",
    deletion: { kind: "cascade", from: "accounts" },
    exportedIn: ["partners"],
  },
  partner_keys: {
    tiedBy: "partner_id → partners.owner_account_id",
    deletion: { kind: "cascade", from: "partners" },
    exportedIn: ["partner_keys"],
  },
  partner_capabilities: {
    tiedBy: "partner_id → partners.owner_account_id (what the partner offers agents)",
    deletion: { kind: "cascade", from: "partners" },
    exportedIn: ["partner_capabilities"],
  },
  partner_resources: {
    tiedBy: "partner_id → partners.owner_account_id",
    // No foreign key: a resource URL is unique, and must be free again once its partner goes.
    deletion: { kind: "trigger", from: "partners", trigger: "partners_free_resources" },
    exportedIn: ["partner_resources"],
  },
  usage_daily: {
    tiedBy: "partner_id → partners.owner_account_id",
    deletion: { kind: "cascade", from: "partners" },
    exportedIn: ["usage_daily"],
  },
  partner_activity: {
    tiedBy: "account_id (the partners that learned the email)",
    deletion: { kind: "cascade", from: "accounts" },
    exportedIn: ["partner_activity"],
  },
  departed_partner_activity: {
    tiedBy: "account_id (deleted partners that learned the email)",
    deletion: { kind: "cascade", from: "accounts" },
    exportedIn: ["departed_partner_activity"],
  },
  device_codes: {
    tiedBy: "account_id, once approved",
    deletion: { kind: "cascade", from: "accounts" },
    exportedIn: ["device_codes"],
  },
  agent_hosts: {
    tiedBy: "account_id, once its person approved an agent on it",
    deletion: { kind: "cascade", from: "accounts" },
    exportedIn: ["agents"],
  },
  agents: {
    tiedBy: "account_id, once approved; host_id → agent_hosts.account_id",
    deletion: { kind: "cascade", from: "agent_hosts" },
    exportedIn: ["agents"],
  },
  agent_activity: {
    tiedBy: "agent_id → agents.account_id (the partners that saw each agent)",
    deletion: { kind: "cascade", from: "agents" },
    exportedIn: ["agents"],
  },
  agent_grants: {
    tiedBy: "agent_id → agents.account_id (the capabilities each agent was granted)",
    deletion: { kind: "cascade", from: "agents" },
    exportedIn: ["agent_grants"],
  },
  oauth_codes: {
    tiedBy: "account_id",
    deletion: { kind: "column", column: "account_id" },
    exportedIn: ["oauth_codes"],
  },
  sign_in_codes: {
    tiedBy: "email",
    deletion: { kind: "column", column: "email" },
    exportedIn: ["sign_in_codes"],
  },
  remembered_browsers: {
    tiedBy: "email",
    deletion: { kind: "column", column: "email" },
    exportedIn: ["remembered_browsers"],
  },
  audit_events: {
    tiedBy: "account_id (by id, never by email)",
    deletion: {
      kind: "kept",
      reason: "the security record outlives the account until its retention ends, by id only",
    },
    exportedIn: ["audit_events"],
  },
} as const satisfies Partial<Record<TableName, PersonalTable>>;

/**
 * Every other table, with why it holds no person's data. A table in neither list fails
 * test/personal-data.test.ts.
 */
export const NOT_PERSONAL_TABLES = {
  sealing_keys: "the service's own keys that seal tokens",
  oauth_clients: "what a client registered about itself: no person",
  rate_limits:
    "budget counters under `<budget>:<key>`, an address's under an HMAC of it, never the address",
  key_epoch: "one counter of the key change log",
  key_changes:
    "ids of changed rows only, kept an hour so every instance drops its cached reads (purge.ts)",
  instances: "the serving instances",
} as const satisfies Partial<Record<TableName, string>>;

export type PersonalTableName = keyof typeof PERSONAL_TABLES;

/** A section of an account's export (`AccountRecord`). */
export type ExportSection = (typeof PERSONAL_TABLES)[PersonalTableName]["exportedIn"][number];

/** The tables whose rows `deleteAccount` deletes by the column that names the account. */
export function deletedByColumn(): { table: PersonalTableName; column: "account_id" | "email" }[] {
  return Object.entries(PERSONAL_TABLES).flatMap(([table, { deletion }]) =>
    deletion.kind === "column"
      ? [{ table: table as PersonalTableName, column: deletion.column }]
      : [],
  );
}
