import type { Generated } from "kysely";

/** Table shapes as Kysely sees them. Times are epoch milliseconds; flags are 0/1 integers. */
export interface IdentityDatabase {
  accounts: { id: string; email: string; created_at: number };
  user_keys: KeyTable & {
    account_id: string;
    /** The OAuth client that obtained the key; null for keys made in the dashboard or the CLI. */
    client_id: string | null;
    /** The partner every token of this key is bound to; null: any partner. */
    audience: string | null;
    /** 1: a refresh token that is replaced at each use (OAuth 2.1, public clients). */
    rotating: number;
    /** Unused since migration 0011 (grants rotate in place); kept for the release before. */
    replaced_by: string | null;
    /**
     * The thumbprint of the DPoP key a grant's key is bound to (migration 0017): it refreshes
     * only with a proof by that key, and mints nothing at `/api/session-tokens`. Null: bearer.
     */
    dpop_jkt: string | null;
  };
  /**
   * A grant (migration 0011): a user key with a client (`user_keys.client_id`) is the grant's
   * anchor, which session tokens name; this row is what the person is shown and, for a rotating
   * refresh token, the family's state (domain/grants.ts). One row per grant, however often it
   * refreshes.
   */
  grants: {
    key_id: string;
    /** The client's name as shown: its registered or documented name, or the device's name. */
    client_name: string;
    /** 1 when the name is vouched for (`isVouchedClientId`); else it is the client's own word. */
    client_verified: number;
    /** The client address the grant was made from; null for grants made before 0011. */
    created_from: string | null;
    /** SHA-256 of the family secret every refresh token of the grant carries; null: not yet. */
    family_hash: string | null;
    /** SHA-256 of the current refresh token; null: the key itself (`apu_`) is generation 0. */
    refresh_hash: string | null;
    generation: number;
    /** When the current refresh token replaced its predecessor. */
    rotated_at: number | null;
  };
  partners: {
    id: string;
    owner_account_id: string;
    name: string;
    website: string | null;
    description: string | null;
    listed: number;
    created_at: number;
    /** The token the partner publishes on its website to prove it controls it; made on demand. */
    site_token: string | null;
    /** When the last check of the website found the token; null: not verified. */
    site_verified_at: number | null;
    /** The origin (scheme, host, port) that check fetched. */
    site_verified_origin: string | null;
    /** When the operator suspended the partner (migration 0015); null: not suspended. */
    suspended_at: number | null;
  };
  /** `suspended_at`: the partner's, copied on each of its keys (migration 0015). */
  partner_keys: KeyTable & { partner_id: string; suspended_at: number | null };
  sealing_keys: {
    /** 8 hex characters, carried in every token the key seals. */
    id: string;
    /** The key in clear (base64), as releases before migration 0005 kept it; null once wrapped. */
    secret: string | null;
    /** The key wrapped under the key-encryption key (`wrapSealingKey`); null until wrapped. */
    wrapped: string | null;
    created_at: number;
  };
  sign_in_codes: {
    id: string;
    email: string;
    /**
     * HMAC of the 6-digit code under `keys.shortCodes` (`keyedHash`), whose key is not in the
     * database (migration 0012; a row of a release before holds a SHA-256 and never redeems).
     */
    code_hash: string;
    /** SHA-256 of the link's 256-bit secret: too long to guess, so no key is needed. */
    link_hash: string;
    /** Hash of the random cookie of the browser that asked: only it can redeem the code. */
    browser_hash: string;
    attempts: number;
    created_at: number;
    expires_at: number;
    used_at: number | null;
  };
  web_sessions: {
    id_hash: string;
    account_id: string;
    created_at: number;
    last_seen_at: number;
    expires_at: number;
  };
  remembered_browsers: { browser_hash: string; email: string; expires_at: number };
  device_codes: {
    device_hash: string;
    /**
     * Not the code: its `device_hash`, kept because the column is NOT NULL UNIQUE for the
     * releases before migration 0012 (which kept the code here in clear). A later release drops it.
     */
    user_code: string;
    /**
     * HMAC of the user code (`XXXX-XXXX`) under `keys.shortCodes`, unique, what it is looked up
     * by; null only on rows written by a release before migration 0012.
     */
    user_code_hash: string | null;
    client_name: string;
    /** Where the login was started (null for logins started before this was recorded). */
    client_address: string | null;
    status: "pending" | "approved" | "denied" | "consumed";
    account_id: string | null;
    created_at: number;
    expires_at: number;
    last_polled_at: number | null;
    /**
     * The agent this code approves (migration 0018) instead of a CLI login; null: a login. Its
     * device code is never given out, so no login poll can redeem it.
     */
    agent_id?: string | null;
  };
  oauth_clients: {
    client_id: string;
    client_name: string;
    /** JSON array of the exact redirect URIs registered. */
    redirect_uris: string;
    created_at: number;
    /**
     * When a code was last issued to the client (migration 0013); null: never, and the client
     * is deleted a day after it registered (`store/purge.ts`).
     */
    last_used_at: number | null;
    /** 1: the client registered `dpop_bound_access_tokens: true` (RFC 9449 section 5.2). */
    dpop_bound: number;
  };
  oauth_codes: {
    code_hash: string;
    client_id: string;
    account_id: string;
    redirect_uri: string;
    /** The PKCE S256 challenge. */
    code_challenge: string;
    /** The partner the tokens will be bound to (the `resource` consented to); null: any. */
    partner_id: string | null;
    scope: string | null;
    expires_at: number;
    used_at: number | null;
    /** The grant the code gave (its key's id): a replay of the code revokes it. */
    key_id: string | null;
    /** The client's name at consent (migration 0011); null for codes issued before. */
    client_name: string | null;
    /** `dpop_jkt` of the authorization request (migration 0017): redeemed with that key only. */
    dpop_jkt: string | null;
  };
  partner_resources: { url: string; partner_id: string; created_at: number };
  usage_daily: { partner_id: string; day: string; outcome: string; count: number };
  rate_limits: { key: string; window_start: number; count: number };
  /** The epoch of the latest key change (migrations 0003 and 0009): one row, id 1. */
  key_epoch: { id: number; value: number };
  /**
   * Key changes in commit order (migration 0009), written by triggers: which cached reads an
   * instance drops (store/key-changes.ts). Purged an hour after `at`.
   */
  key_changes: {
    epoch: number;
    table_name: string;
    row_id: string;
    secret_hash: string | null;
    at: number;
  };
  /** A person's client environment (migration 0018): its key, known by the key's thumbprint. */
  agent_hosts: {
    id: string;
    /** The person it is linked to, by their first approval of one of its agents; null: none yet. */
    account_id: string | null;
    /** What the host calls itself: its own words, shown as data. */
    name: string | null;
    /** RFC 7638 thumbprint (SHA-256, base64url) of its current public key: its JWTs' `iss`. */
    thumbprint: string;
    /** The public Ed25519 JWK (JSON). */
    public_jwk: string;
    status: "pending" | "active" | "revoked" | "rejected";
    created_at: number;
    updated_at: number;
    last_used_at: number | null;
    revoked_at: number | null;
  };
  /**
   * An agent (migration 0018): its own key under a host. `status` is as stored; an active agent
   * idle or past its lifetime is expired or revoked as `domain/agents.ts` reads it.
   */
  agents: {
    id: string;
    host_id: string;
    account_id: string | null;
    name: string;
    thumbprint: string;
    public_jwk: string;
    status: "pending" | "active" | "revoked" | "rejected";
    created_at: number;
    activated_at: number | null;
    last_used_at: number | null;
    revoked_at: number | null;
  };
  /** Which partners verified which agent, when first and last, how often (migration 0018). */
  agent_activity: {
    agent_id: string;
    partner_id: string;
    first_at: number;
    last_at: number;
    count: number;
  };
  /** A capability a partner offers agents, executed at its `location` (migration 0019). */
  partner_capabilities: {
    /** `[a-z0-9_]+`, one partner's across the service. */
    name: string;
    partner_id: string;
    description: string;
    /** The absolute URL the agent sends its execution to, at one of the partner's resources. */
    location: string;
    /** JSON Schema of the arguments (an object), as JSON; null: none. */
    input_schema: string | null;
    output_schema: string | null;
    updated_at: number;
  };
  /** An agent's grant of a capability (migration 0019; section 3.3). */
  agent_grants: {
    agent_id: string;
    capability: string;
    status: "pending" | "active" | "denied";
    /** The approved constraints (section 2.13), as JSON; null: unconstrained. */
    constraints: string | null;
    /** Why the agent asked, in its own words. */
    reason: string | null;
    created_at: number;
    updated_at: number;
  };
  partner_activity: {
    account_id: string;
    partner_id: string;
    first_at: number;
    last_at: number;
    count: number;
  };
  /**
   * `partner_activity` of partners deleted since, copied by a trigger as the partner goes
   * (migration 0010), with the partner's name and website as they were.
   */
  departed_partner_activity: {
    account_id: string;
    partner_id: string;
    name: string;
    website: string | null;
    first_at: number;
    last_at: number;
    count: number;
    deleted_at: number;
  };
  /**
   * Security events (migration 0014, `domain/audit.ts`), in the order stored; purged
   * `AUDIT_RETENTION_DAYS` after `at`. Never a secret.
   */
  instances: InstancesTable;
  audit_events: {
    id: Generated<number>;
    at: number;
    action: string;
    outcome: string;
    actor_kind: string;
    actor_id: string | null;
    /** The account the event concerns, shown on its own page; null: none (a sealing key). */
    account_id: string | null;
    subject_kind: string | null;
    subject_id: string | null;
    client_address: string | null;
    user_agent: string | null;
    /** JSON object of names and counts. */
    detail: string | null;
    /** How many times it happened (migration 0016): repeats of a refusal fold into one row. */
    occurrences: Generated<number>;
    /** When it last happened, when more than once; `at` is the first time. */
    last_at: number | null;
  };
}

/**
 * The serving instances (migration 0015, `store/instance-store.ts`), each with a check value of
 * its secret (`secretCheck`), never the secret; a row not seen for a day is purged.
 */
interface InstancesTable {
  id: string;
  secret_check: string;
  started_at: number;
  seen_at: number;
}

interface KeyTable {
  id: string;
  name: string;
  /** The first characters of the key, safe to show (e.g. `apu_3kT9xQ2m`). */
  display_prefix: string;
  /** SHA-256 of the whole key, base64url. The key itself is never stored. */
  secret_hash: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}
