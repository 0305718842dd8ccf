import { randomUUID } from "node:crypto";
import type { ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import { sql } from "kysely";
import { deletedByColumn } from "./personal-data.ts";
import type { IdentityDatabase } from "./schema.ts";
import type { Store } from "./store.ts";

export interface Account {
  id: string;
  email: string;
  createdAt: number;
}

/**
 * The accounts of `Store`: one per email, deleted with every row that names them, as
 * personal-data.ts lists them (the foreign keys cascade to keys, grants, sessions, partners and
 * activity; the rest is deleted here). The audit events stay until their retention ends: see
 * docs/operations.md, "Data lifecycle".
 */
export function createAccountStore(
  database: StoreDatabase<IdentityDatabase>,
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
      await database.transaction(async (trx) => {
        const account = await trx
          .selectFrom("accounts")
          .select("email")
          .where("id", "=", accountId)
          .executeTakeFirst();
        if (!account) return;
        // The rows that name the person by email, or by id without a foreign key to cascade
        // (personal-data.ts); the others cascade from the account's row.
        for (const { table, column } of deletedByColumn()) {
          const named = column === "email" ? account.email : accountId;
          await sql`DELETE FROM ${sql.table(table)} WHERE ${sql.ref(column)} = ${named}`.execute(
            trx,
          );
        }
        await trx.deleteFrom("accounts").where("id", "=", accountId).execute();
      });
    },
  };
}
