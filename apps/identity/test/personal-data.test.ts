import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type Engine, testEngines } from "@agentpass/db/testing";
import { type Kysely, sql } from "kysely";
import { NOT_PERSONAL_TABLES, PERSONAL_TABLES } from "../src/store/personal-data.ts";
import type { IdentityDatabase } from "../src/store/schema.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

/** A column that names an account: its id, its email, its owner. */
const NAMES_AN_ACCOUNT = /(^|_)(account|email|owner)(_|$)/;

interface Schema {
  /** Each table's columns. */
  columns: Map<string, string[]>;
  /** Each foreign key: from which table, to which, and whether deleting cascades. */
  foreignKeys: { table: string; references: string; cascades: boolean }[];
  /** Each trigger, by name, and the table it is on. */
  triggers: { name: string; table: string }[];
}

/** The migrator's own tables: which migrations ran. */
const MIGRATION_TABLES = /^(kysely_|identity_migrations)/;

/** The live schema's tables, columns, foreign keys and triggers, less the migrator's tables. */
async function readSchema(engine: Engine, db: Kysely<IdentityDatabase>): Promise<Schema> {
  const columnRows =
    engine === "sqlite"
      ? await sql<{ table_name: string; column_name: string }>`SELECT m.name AS table_name,
            c.name AS column_name
          FROM sqlite_master m, pragma_table_info(m.name) c
          WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'`.execute(db)
      : await sql<{ table_name: string; column_name: string }>`SELECT table_name, column_name
          FROM information_schema.columns
          WHERE table_schema = current_schema()`.execute(db);
  const keyRows =
    engine === "sqlite"
      ? await sql<{ table_name: string; references: string; on_delete: string }>`SELECT
            m.name AS table_name, f."table" AS "references", f.on_delete
          FROM sqlite_master m, pragma_foreign_key_list(m.name) f
          WHERE m.type = 'table'`.execute(db)
      : await sql<{ table_name: string; references: string; on_delete: string }>`SELECT
            conrelid::regclass::text AS table_name, confrelid::regclass::text AS "references",
            CASE confdeltype WHEN 'c' THEN 'CASCADE' ELSE confdeltype::text END AS on_delete
          FROM pg_constraint
          WHERE contype = 'f' AND connamespace = current_schema()::regnamespace`.execute(db);
  const triggerRows =
    engine === "sqlite"
      ? await sql<{ name: string; table_name: string }>`SELECT name, tbl_name AS table_name
          FROM sqlite_master WHERE type = 'trigger'`.execute(db)
      : await sql<{ name: string; table_name: string }>`SELECT DISTINCT trigger_name AS name,
            event_object_table AS table_name
          FROM information_schema.triggers
          WHERE trigger_schema = current_schema()`.execute(db);
  const columns = new Map<string, string[]>();
  for (const row of columnRows.rows) {
    if (MIGRATION_TABLES.test(row.table_name)) continue;
    columns.set(row.table_name, [...(columns.get(row.table_name) ?? []), row.column_name]);
  }
  const foreignKeys = keyRows.rows.map((row) => ({
    table: row.table_name,
    references: row.references,
    cascades: row.on_delete.toUpperCase() === "CASCADE",
  }));
  const triggers = triggerRows.rows.map((row) => ({ name: row.name, table: row.table_name }));
  return { columns, foreignKeys, triggers };
}

/**
 * The tables that hold a person's data as the schema shows it: a column names an account, or the
 * table hangs on one that does, by a foreign key or by a `<name>_id` column of a table `<name>s`
 * (a tie kept without a foreign key, as `partner_resources.partner_id`).
 */
function tablesNamingAnAccount(schema: Schema): string[] {
  const found = new Set(
    [...schema.columns]
      .filter(([, columns]) => columns.some((column) => NAMES_AN_ACCOUNT.test(column)))
      .map(([table]) => table),
  );
  for (let grew = true; grew; ) {
    grew = false;
    const ties = [
      ...schema.foreignKeys,
      ...[...schema.columns].flatMap(([table, columns]) =>
        columns.flatMap((column) => {
          const named = /^(.+)_id$/.exec(column)?.[1];
          return named ? [{ table, references: `${named}s` }] : [];
        }),
      ),
    ];
    for (const tie of ties) {
      if (found.has(tie.references) && !found.has(tie.table)) {
        found.add(tie.table);
        grew = true;
      }
    }
  }
  return [...found].sort();
}

/** What is wrong with personal-data.ts against `schema`, one line each; none when it holds. */
function personalDataFaults(schema: Schema): string[] {
  const personal = new Map<string, (typeof PERSONAL_TABLES)[keyof typeof PERSONAL_TABLES]>(
    Object.entries(PERSONAL_TABLES),
  );
  const notPersonal = new Set(Object.keys(NOT_PERSONAL_TABLES));
  const faults: string[] = [];
  for (const table of schema.columns.keys()) {
    if (!personal.has(table) && !notPersonal.has(table)) {
      faults.push(`${table}: in neither PERSONAL_TABLES nor NOT_PERSONAL_TABLES`);
    }
  }
  for (const table of tablesNamingAnAccount(schema)) {
    if (!personal.has(table))
      faults.push(`${table}: names an account but is not in PERSONAL_TABLES`);
  }
  for (const table of [...personal.keys(), ...notPersonal]) {
    if (!schema.columns.has(table)) faults.push(`${table}: listed, but no such table`);
  }
  // Each table's sections of the export are the compiler's to check: `AccountRecord` has them.
  for (const [table, { deletion }] of personal) {
    if (
      deletion.kind === "cascade" &&
      !schema.foreignKeys.some(
        (key) => key.table === table && key.references === deletion.from && key.cascades,
      )
    ) {
      faults.push(`${table}: no foreign key to ${deletion.from} that cascades`);
    }
    if (
      deletion.kind === "trigger" &&
      !schema.triggers.some(
        (trigger) => trigger.name === deletion.trigger && trigger.table === deletion.from,
      )
    ) {
      faults.push(`${table}: no trigger ${deletion.trigger} on ${deletion.from}`);
    }
    if (deletion.kind === "column" && !schema.columns.get(table)?.includes(deletion.column)) {
      faults.push(`${table}: no column ${deletion.column} to delete by`);
    }
  }
  return faults.sort();
}

for (const engine of testEngines()) {
  describe(`personal data (${engine})`, () => {
    let identity: TestIdentity;

    before(async () => {
      identity = await openTestIdentity(engine);
    });
    after(() => identity.close());

    it("lists every table of the schema, and each that names an account is deleted and exported", async () => {
      const schema = await readSchema(engine, identity.db);
      assert.ok(schema.columns.has("accounts") && schema.foreignKeys.length > 0, "the scan sees");
      assert.deepEqual(personalDataFaults(schema), []);
    });

    it("finds a new table that names an account, directly, by a foreign key or by an id column, unless it is listed", async () => {
      await sql`CREATE TABLE scratch_owned (id text PRIMARY KEY, owner_account_id text)`.execute(
        identity.db,
      );
      await sql`CREATE TABLE scratch_hanging (
        owned_id text REFERENCES scratch_owned(id) ON DELETE CASCADE
      )`.execute(identity.db);
      await sql`CREATE TABLE scratch_by_partner (partner_id text)`.execute(identity.db);
      try {
        const faults = personalDataFaults(await readSchema(engine, identity.db));
        assert.deepEqual(faults, [
          "scratch_by_partner: in neither PERSONAL_TABLES nor NOT_PERSONAL_TABLES",
          "scratch_by_partner: names an account but is not in PERSONAL_TABLES",
          "scratch_hanging: in neither PERSONAL_TABLES nor NOT_PERSONAL_TABLES",
          "scratch_hanging: names an account but is not in PERSONAL_TABLES",
          "scratch_owned: in neither PERSONAL_TABLES nor NOT_PERSONAL_TABLES",
          "scratch_owned: names an account but is not in PERSONAL_TABLES",
        ]);
      } finally {
        await sql`DROP TABLE scratch_by_partner`.execute(identity.db);
        await sql`DROP TABLE scratch_hanging`.execute(identity.db);
        await sql`DROP TABLE scratch_owned`.execute(identity.db);
      }
    });
  });
}
