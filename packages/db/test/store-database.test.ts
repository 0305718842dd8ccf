import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { typeErrorsIn } from "@agentpass/db/testing";

// A file beside the real stores, so "@agentpass/db" resolves as theirs does.
const STORE_PATH = "apps/notes/src/store/compile-check.ts";

/** Each statement, one a line, in a store over a one-table schema. */
function storeSource(statements: readonly string[]): string {
  return [
    `import type { StoreDatabase } from "@agentpass/db";`,
    "interface Schema { notes: { id: string; title: string } }",
    "export async function runNoteStore(database: StoreDatabase<Schema>) {",
    ...statements.map((statement) => `  await ${statement};`),
    "}",
  ].join("\n");
}
const FIRST_STATEMENT_LINE = 4;

const writesOutsideWrite = {
  insertInto: `database.db.insertInto("notes").values({ id: "a", title: "t" }).execute()`,
  updateTable: `database.db.updateTable("notes").set({ title: "t" }).execute()`,
  deleteFrom: `database.db.deleteFrom("notes").execute()`,
  transaction: "database.db.transaction().execute(async () => {})",
  schema: `database.db.schema.dropTable("notes").execute()`,
  withSchema: `database.db.withSchema("public").deleteFrom("notes").execute()`,
};

describe("StoreDatabase", () => {
  it("compiles a store's reads through db and its writes through write and transaction", () => {
    const errors = typeErrorsIn(
      STORE_PATH,
      storeSource([
        `database.db.selectFrom("notes").select("title").where("id", "=", "a").execute()`,
        `database.write((db) => db.insertInto("notes").values({ id: "a", title: "t" }).execute())`,
        `database.transaction((trx) => trx.deleteFrom("notes").execute())`,
      ]),
    );
    assert.deepEqual(errors, []);
  });

  it("refuses to compile a store that writes through db, outside write", () => {
    const errors = typeErrorsIn(STORE_PATH, storeSource(Object.values(writesOutsideWrite)));
    assert.equal(errors.length, Object.keys(writesOutsideWrite).length, errors.join("\n"));
    Object.keys(writesOutsideWrite).forEach((method, index) => {
      assert.match(
        errors[index] ?? "",
        new RegExp(
          `^${FIRST_STATEMENT_LINE + index}: TS(2339|2551): Property '${method}' does not exist on type 'ReadOnlyDb<Schema>'`,
        ),
      );
    });
  });
});
