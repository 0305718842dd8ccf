import {
  createBudgetedReader,
  isReadTimeout,
  type RowsReader,
  type StoreDatabase,
} from "@agentpass/db";
import type { CompiledQuery } from "kysely";
import { refusal } from "./limits.ts";

/**
 * Reads the rows of one search statement (objects of their columns by name) within its budget;
 * past it, throws `SEARCH_TIMEOUT`.
 */
type SearchReader = RowsReader;

/**
 * Runs search statements with a budget of `timeoutMs` each, so that no search holds a thread or
 * a connection past it: each engine's way of stopping a statement is `createBudgetedReader`'s
 * (`@agentpass/db`). On SQLite a search calls `within_deadline()` on every row it scans
 * (search-sqlite.ts), where the budget stops it.
 */
export function createSearchReader(
  database: Pick<StoreDatabase<unknown>, "handles">,
  timeoutMs: number,
): SearchReader {
  const read = createBudgetedReader(database, timeoutMs);
  return async <Row extends object>(query: CompiledQuery) => {
    try {
      return await read<Row>(query);
    } catch (error) {
      throw isReadTimeout(error) ? refusal("SEARCH_TIMEOUT", timeoutMs, error) : error;
    }
  };
}
