import { LRUCache } from "lru-cache";

const MAX_ENTRIES = 10_000;

/** Tells whether the database may have changed since its previous call. */
export type ChangeCheck = () => boolean | Promise<boolean>;

/**
 * Wraps single-row reads in caches that are emptied whenever the database may have changed.
 *
 * `beginRequest()` resolves once a change check that *started after the call* has finished, so
 * a request never trusts the cache on the strength of a check made before it arrived: whatever
 * was committed before the request arrived — a revocation by this process, another process or
 * another instance — is seen by it. Checks are shared, which is what makes them cheap: every
 * request that arrives before a check starts waits for that one check. A check starts in the
 * event loop's check phase (`setImmediate`), so the requests read from the sockets in one turn
 * share it, and at most one runs at a time; requests arriving while one runs share the next.
 * A failed check fails the requests that waited for it (no read is served unchecked).
 *
 * `onChange` runs inside the check that noticed a change, awaited, so the requests that waited
 * for the check see its effect (the sealing keys re-read after a rotation). When it fails, the
 * check fails, and the next check runs it again even if nothing changed since.
 */
export function createReadCaches(hasChanged: ChangeCheck, onChange?: () => Promise<void>) {
  let generation = 0;
  let changePending = false;
  const awaitCheck = shareChecks(async () => {
    if (await hasChanged()) {
      generation++;
      changePending = onChange !== undefined;
    }
    if (changePending) {
      await onChange?.();
      changePending = false;
    }
  });
  return {
    /** Call once per request, and await it, before its cached reads. */
    beginRequest: awaitCheck,

    cached<Row>(read: (key: string) => Promise<Row | undefined>) {
      // Rows wrapped, as lru-cache stores no undefined (a key that does not exist is cached too).
      const entries = new LRUCache<string, { row: Row | undefined }>({ max: MAX_ENTRIES });
      let entriesGeneration = generation;
      return async (key: string): Promise<Row | undefined> => {
        if (entriesGeneration !== generation) {
          entries.clear();
          entriesGeneration = generation;
        }
        const hit = entries.get(key);
        if (hit) return hit.row;
        const startedIn = generation;
        const row = await read(key);
        // A read that began before a change and ended after the check that noticed it may hold
        // the row as it was (a key not yet revoked): it answers its own request, which arrived
        // before the change, but is never kept for the requests after it.
        if (startedIn === generation && entriesGeneration === generation) entries.set(key, { row });
        return row;
      };
    },
  };
}

/**
 * Runs `check` on behalf of many callers: a call resolves when a run that started after it ends.
 * Callers join the next run until it starts; it starts in the check phase of the event loop, or
 * as soon as the run before it ends.
 */
export function shareChecks(check: () => Promise<void>): () => Promise<void> {
  let next: PromiseWithResolvers<void> | undefined;
  let running = false;
  const run = async () => {
    const batch = next as PromiseWithResolvers<void>;
    next = undefined;
    running = true;
    try {
      await check();
      batch.resolve();
    } catch (error) {
      batch.reject(error);
    } finally {
      running = false;
      if (next) void run();
    }
  };
  return () => {
    if (!next) {
      next = Promise.withResolvers<void>();
      if (!running) setImmediate(run);
    }
    return next.promise;
  };
}
