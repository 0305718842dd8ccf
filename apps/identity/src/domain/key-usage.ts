import type { KeyTableName, Store } from "../store/store.ts";

const FLUSH_INTERVAL_MS = 5_000;

/**
 * Keeps `lastUsedAt` of keys without a write on the request path: uses are gathered in memory
 * and written in one batch every few seconds, and once more on close.
 */
export function createKeyUsageRecorder(store: Store, onError: (error: unknown) => void) {
  const pending: Record<KeyTableName, Map<string, number>> = {
    user_keys: new Map(),
    partner_keys: new Map(),
  };

  async function flush(): Promise<void> {
    for (const table of ["user_keys", "partner_keys"] as const) {
      const uses = pending[table];
      if (uses.size === 0) continue;
      pending[table] = new Map();
      await store.recordKeyUse(table, uses);
    }
  }

  const timer = setInterval(() => flush().catch(onError), FLUSH_INTERVAL_MS);
  timer.unref();

  return {
    record(table: KeyTableName, id: string, at: number): void {
      pending[table].set(id, at);
    },
    flush,
    async close(): Promise<void> {
      clearInterval(timer);
      await flush();
    },
  };
}

export type KeyUsageRecorder = ReturnType<typeof createKeyUsageRecorder>;
