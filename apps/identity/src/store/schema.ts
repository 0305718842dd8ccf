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
    /** The key that replaced this one at a refresh; a replaced key presented again is a replay. */
    replaced_by: string | null;
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
  };
  partner_keys: KeyTable & { partner_id: string };
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
    code_hash: string;
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
    user_code: string;
    client_name: string;
    /** Where the login was started (null for logins started before this was recorded). */
    client_address: string | null;
    status: "pending" | "approved" | "denied" | "consumed";
    account_id: string | null;
    created_at: number;
    expires_at: number;
    last_polled_at: number | null;
  };
  oauth_clients: {
    client_id: string;
    client_name: string;
    /** JSON array of the exact redirect URIs registered. */
    redirect_uris: string;
    created_at: number;
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
    /** The user key the code gave: a replay of the code revokes it. */
    key_id: string | null;
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
