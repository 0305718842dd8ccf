/** Table shapes as Kysely sees them. Times are epoch milliseconds; flags are 0/1 integers. */
export interface IdentityDatabase {
  accounts: { id: string; email: string; created_at: number };
  user_keys: KeyTable & { account_id: string };
  partners: {
    id: string;
    owner_account_id: string;
    name: string;
    website: string | null;
    description: string | null;
    listed: number;
    created_at: number;
  };
  partner_keys: KeyTable & { partner_id: string };
  sealing_keys: { id: string; secret: string; created_at: number };
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
