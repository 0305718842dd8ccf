import { randomUUID } from "node:crypto";
import type { OpenedDatabase, ReadOnlyDb } from "@agentpass/db";
import type { IdentityDatabase } from "./schema.ts";
import type { NewKey } from "./store.ts";

export interface RegisteredClient {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  createdAt: number;
}

export type AuthorizationCode = IdentityDatabase["oauth_codes"];

/**
 * OAuth's own rows: registered clients, authorization codes, partners' resource URLs, and the
 * rotation of refresh tokens (user keys obtained by a browser flow).
 */
export function createOAuthStore(
  database: Pick<OpenedDatabase<IdentityDatabase>, "db" | "write" | "transaction">,
) {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;
  return {
    async insertClient(client: RegisteredClient): Promise<void> {
      await database.write((db) =>
        db
          .insertInto("oauth_clients")
          .values({
            client_id: client.clientId,
            client_name: client.clientName,
            redirect_uris: JSON.stringify(client.redirectUris),
            created_at: client.createdAt,
          })
          .execute(),
      );
    },

    async findClient(clientId: string): Promise<RegisteredClient | undefined> {
      const row = await reads
        .selectFrom("oauth_clients")
        .selectAll()
        .where("client_id", "=", clientId)
        .executeTakeFirst();
      return (
        row && {
          clientId: row.client_id,
          clientName: row.client_name,
          redirectUris: JSON.parse(row.redirect_uris) as string[],
          createdAt: row.created_at,
        }
      );
    },

    async insertCode(code: AuthorizationCode): Promise<void> {
      await database.write((db) => db.insertInto("oauth_codes").values(code).execute());
    },

    /**
     * Spends a code: the row as it was when this call marked it used, or undefined when it was
     * already used (then `replayed` tells) or does not exist. One statement, so two redemptions
     * racing each other cannot both win.
     */
    async takeCode(
      codeHash: string,
      now: number,
    ): Promise<{ code?: AuthorizationCode; replayed: boolean }> {
      const taken = await database.write((db) =>
        db
          .updateTable("oauth_codes")
          .set({ used_at: now })
          .where("code_hash", "=", codeHash)
          .where("used_at", "is", null)
          .returningAll()
          .executeTakeFirst(),
      );
      if (taken) return { code: taken, replayed: false };
      const existing = await reads
        .selectFrom("oauth_codes")
        .select("code_hash")
        .where("code_hash", "=", codeHash)
        .executeTakeFirst();
      return { replayed: existing !== undefined };
    },

    /** Records which key a code gave, so a replay of the code can revoke it. */
    async linkCodeToKey(codeHash: string, keyId: string): Promise<void> {
      await database.write((db) =>
        db
          .updateTable("oauth_codes")
          .set({ key_id: keyId })
          .where("code_hash", "=", codeHash)
          .execute(),
      );
    },

    async keyOfCode(codeHash: string): Promise<string | undefined> {
      const row = await reads
        .selectFrom("oauth_codes")
        .select("key_id")
        .where("code_hash", "=", codeHash)
        .executeTakeFirst();
      return row?.key_id ?? undefined;
    },

    async addResource(partnerId: string, url: string, now: number): Promise<boolean> {
      const result = await database.write((db) =>
        db
          .insertInto("partner_resources")
          .values({ url, partner_id: partnerId, created_at: now })
          .onConflict((oc) => oc.column("url").doNothing())
          .returning("url")
          .executeTakeFirst(),
      );
      return result !== undefined;
    },

    async removeResource(partnerId: string, url: string): Promise<void> {
      await database.write((db) =>
        db
          .deleteFrom("partner_resources")
          .where("partner_id", "=", partnerId)
          .where("url", "=", url)
          .execute(),
      );
    },

    async removeResourcesOf(partnerId: string): Promise<void> {
      await database.write((db) =>
        db.deleteFrom("partner_resources").where("partner_id", "=", partnerId).execute(),
      );
    },

    async resourcesOf(partnerId: string): Promise<string[]> {
      const rows = await reads
        .selectFrom("partner_resources")
        .select("url")
        .where("partner_id", "=", partnerId)
        .orderBy("url")
        .execute();
      return rows.map((row) => row.url);
    },

    async partnerOfResource(url: string): Promise<string | undefined> {
      const row = await reads
        .selectFrom("partner_resources")
        .select("partner_id")
        .where("url", "=", url)
        .executeTakeFirst();
      return row?.partner_id;
    },

    /**
     * Replaces a rotating refresh token: inserts its successor and revokes it, in one
     * transaction; undefined (nothing written) when it was revoked meanwhile (a concurrent
     * refresh won).
     */
    async rotateKey(oldId: string, next: NewKey, now: number): Promise<string | undefined> {
      const id = randomUUID();
      return database.transaction(async (trx) => {
        const revoked = await trx
          .updateTable("user_keys")
          .set({ revoked_at: now, replaced_by: id })
          .where("id", "=", oldId)
          .where("revoked_at", "is", null)
          .executeTakeFirst();
        if (revoked.numUpdatedRows === 0n) return undefined;
        await trx
          .insertInto("user_keys")
          .values({
            id,
            account_id: next.ownerId,
            name: next.name,
            display_prefix: next.displayPrefix,
            secret_hash: next.secretHash,
            created_at: next.createdAt,
            last_used_at: null,
            revoked_at: null,
            client_id: next.grant?.clientId ?? null,
            audience: next.grant?.audience ?? null,
            rotating: next.grant?.rotating ? 1 : 0,
          })
          .execute();
        return id;
      });
    },

    /** Revokes `keyId` and every key that replaced it, in turn: a replayed refresh token. */
    async revokeLineage(keyId: string, now: number): Promise<void> {
      await database.transaction(async (trx) => {
        let next: string | null | undefined = keyId;
        for (let hops = 0; next && hops < 10_000; hops++) {
          await trx
            .updateTable("user_keys")
            .set({ revoked_at: now })
            .where("id", "=", next)
            .where("revoked_at", "is", null)
            .execute();
          const row = await trx
            .selectFrom("user_keys")
            .select("replaced_by")
            .where("id", "=", next)
            .executeTakeFirst();
          next = row?.replaced_by;
        }
      });
    },
  };
}

export type OAuthStore = ReturnType<typeof createOAuthStore>;
