import type { DatabaseSync, SQLInputValue } from "node:sqlite";

/**
 * A statement on a node:sqlite connection whose rows come out as plain objects of their columns
 * by name, all of one shape. node:sqlite's own row objects have a null prototype and are slower
 * to build and to read than arrays: the rows are read as arrays and made objects here.
 */
export function prepareRowObjects(sqlite: DatabaseSync, sql: string) {
  const statement = sqlite.prepare(sql);
  statement.setReturnArrays(true);
  const names = statement.columns().map((column) => column.name);
  const toObject = (values: unknown[]) => {
    const row: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) row[names[i] as string] = values[i];
    return row;
  };
  return {
    all(params: readonly SQLInputValue[]): Record<string, unknown>[] {
      return (statement.all(...params) as unknown as unknown[][]).map(toObject);
    },
    get(params: readonly SQLInputValue[]): Record<string, unknown> | undefined {
      const values = statement.get(...params) as unknown as unknown[] | undefined;
      return values && toObject(values);
    },
  };
}
