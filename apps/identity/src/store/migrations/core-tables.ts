import type { CreateTableBuilder } from "kysely";
import type { AnyDb } from "./any-db.ts";

/** Migration 0001: accounts, their keys, partners, their keys, and the sealing keys. */
export async function createCoreTables(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("accounts")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("email", "text", (c) => c.notNull().unique())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("user_keys")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) =>
      c.notNull().references("accounts.id").onDelete("cascade"),
    )
    .$call(addKeyColumns)
    .execute();
  await db.schema.createIndex("user_keys_account").on("user_keys").column("account_id").execute();
  await db.schema
    .createTable("partners")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("owner_account_id", "text", (c) =>
      c.notNull().references("accounts.id").onDelete("cascade"),
    )
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("website", "text")
    .addColumn("description", "text")
    .addColumn("listed", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("partners_owner").on("partners").column("owner_account_id").execute();
  await db.schema
    .createTable("partner_keys")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("partner_id", "text", (c) =>
      c.notNull().references("partners.id").onDelete("cascade"),
    )
    .$call(addKeyColumns)
    .execute();
  await db.schema
    .createIndex("partner_keys_partner")
    .on("partner_keys")
    .column("partner_id")
    .execute();
  await db.schema
    .createTable("sealing_keys")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("secret", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
}

function addKeyColumns<T extends string>(table: CreateTableBuilder<T>): CreateTableBuilder<T> {
  return table
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("display_prefix", "text", (c) => c.notNull())
    .addColumn("secret_hash", "text", (c) => c.notNull().unique())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("last_used_at", "bigint")
    .addColumn("revoked_at", "bigint");
}
