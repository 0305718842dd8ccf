import { randomUUID } from "node:crypto";
import type { OpenedDatabase, ReadOnlyDb } from "@agentpass/db";
import type { IdentityDatabase } from "./schema.ts";
import type { Store } from "./store.ts";

export interface Account {
  id: string;
  email: string;
  createdAt: number;
}

/** The accounts of `Store`: one per email, deleted with everything they own. */
export function createAccountStore(
  database: OpenedDatabase<IdentityDatabase>,
): Pick<Store, "createAccount" | "findAccountByEmail" | "deleteAccount"> {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;
  return {
    async createAccount(email: string, createdAt: number): Promise<Account | null> {
      const account = { id: randomUUID(), email, created_at: createdAt };
      const inserted = await database.write((db) =>
        db
          .insertInto("accounts")
          .values(account)
          .onConflict((oc) => oc.column("email").doNothing())
          .returning("id")
          .executeTakeFirst(),
      );
      return inserted ? { id: account.id, email, createdAt } : null;
    },

    async findAccountByEmail(email: string): Promise<Account | undefined> {
      const row = await reads
        .selectFrom("accounts")
        .selectAll()
        .where("email", "=", email)
        .executeTakeFirst();
      return row && { id: row.id, email: row.email, createdAt: row.created_at };
    },

    async deleteAccount(accountId: string): Promise<void> {
      await database.write((db) => db.deleteFrom("accounts").where("id", "=", accountId).execute());
    },
  };
}
