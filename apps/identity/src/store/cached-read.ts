const MAX_ENTRIES = 10_000;

/**
 * Wraps a single-row read in a cache that is emptied whenever the database may have changed
 * (`hasChanged`, checked once per `beginRequest`). Without a change detector (PostgreSQL, where
 * other instances write unseen) every read goes to the database.
 */
export function createReadCaches(hasChanged: (() => boolean) | undefined) {
  let generation = 0;
  return {
    /** Call once per request, before its cached reads. */
    beginRequest(): void {
      if (hasChanged?.()) generation++;
    },

    cached<Row>(read: (key: string) => Promise<Row | undefined>) {
      if (!hasChanged) return read;
      let entries = new Map<string, Row | undefined>();
      let entriesGeneration = generation;
      return async (key: string): Promise<Row | undefined> => {
        if (entriesGeneration !== generation || entries.size >= MAX_ENTRIES) {
          entries = new Map();
          entriesGeneration = generation;
        }
        if (entries.has(key)) return entries.get(key);
        const row = await read(key);
        entries.set(key, row);
        return row;
      };
    },
  };
}
