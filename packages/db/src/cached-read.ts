import { LRUCache } from "lru-cache";

const MAX_ENTRIES = 10_000;

/** One changed row, as a service's change log names it (identity: store/key-changes.ts). */
export interface Change {
  table: string;
  /** The row's id. */
  rowId: string;
  /** The key a cache holds the row under when it is not its id (a key's secret hash), or null. */
  hash: string | null;
}

/**
 * What a change check found since its previous run: `false`, nothing; a list, exactly these rows
 * changed; `true`, anything may have changed (it cannot say what: every cache is emptied).
 */
export type FoundChanges = boolean | readonly Change[];

/** Tells what may have changed in the database since its previous call. */
export type ChangeCheck = () => FoundChanges | Promise<FoundChanges>;

/** The entries of one cache, as a change drops them (`cached`'s `evict`). */
export interface CacheEntries<Row> {
  /** Drops the entry of `key`, and keeps any read of it in flight from being stored. */
  delete(key: string): void;
  /** Drops every entry whose row is stale: reads every entry, so for rare changes only. */
  deleteWhere(stale: (row: Row | undefined) => boolean): void;
}

declare const hotReadBrand: unique symbol;

/**
 * Proof that a request awaited its change check: what `beginRequest` resolves to, and what every
 * cached read takes first, so a cached read that skips the check does not compile. Nothing else
 * makes one (short of a cast); it holds nothing, and is for the one request that awaited it.
 */
export interface HotRead {
  readonly [hotReadBrand]: true;
}

const HOT_READ = Object.freeze({}) as HotRead;

/** How the reads of a `createReadCaches` went since it was made: served from a cache, or read. */
export interface CacheLookups {
  readonly hits: number;
  readonly misses: number;
}

/**
 * Wraps single-row reads in caches that drop what the database changed.
 *
 * `beginRequest()` resolves once a change check that *started after the call* has finished, so
 * a request never trusts the cache on the strength of a check made before it arrived: whatever
 * was committed before the request arrived — a revocation by this process, another process or
 * another instance — is seen by it. Checks are shared, which is what makes them cheap: every
 * request that arrives before a check starts waits for that one check. A check starts in the
 * event loop's check phase (`setImmediate`), so the requests read from the sockets in one turn
 * share it, and at most one runs at a time; requests arriving while one runs share the next,
 * which starts in the check phase after it ends.
 * A failed check fails the requests that waited for it (no read is served unchecked).
 *
 * A check that lists its changes drops, in each cache, the entries those rows were read into
 * (`cached`'s `evict`), before the requests that waited for it go on; one that cannot list them
 * empties every cache. A read in flight when its entry is dropped answers its own request, which
 * arrived before the change, but is never stored for the requests after it.
 *
 * `onChange` runs inside the check that found a change, awaited, so the requests that waited
 * for the check see its effect (the sealing keys re-read after a rotation). When it fails, the
 * check fails, and the next check runs it again (with what that one found) even if nothing
 * changed since.
 */
export function createReadCaches(
  hasChanged: ChangeCheck,
  onChange?: (changes: true | readonly Change[]) => Promise<void>,
) {
  const caches: { clear(): void; evict(change: Change): void }[] = [];
  // Plain numbers a metrics scrape reads: a cached read costs an increment, nothing more.
  const lookups = { hits: 0, misses: 0 };
  let owed: true | readonly Change[] | undefined;
  const awaitCheck = shareChecks(async () => {
    const found = await hasChanged();
    if (found === true) {
      for (const cache of caches) cache.clear();
    } else if (found !== false) {
      for (const change of found) for (const cache of caches) cache.evict(change);
    }
    if (onChange && (found === true || (found !== false && found.length > 0))) {
      owed = owed === true || found === true ? true : [...(owed ?? []), ...found];
    }
    if (owed !== undefined) {
      await onChange?.(owed);
      owed = undefined;
    }
    return HOT_READ;
  });
  return {
    /** Call once per request, and await it: its `HotRead` is what the request's cached reads take. */
    beginRequest: awaitCheck,

    /** The reads of every cache made here, hits and misses, counted since it was made. */
    lookups: lookups as CacheLookups,

    /**
     * `read` behind a cache, read with the `HotRead` of the request's `beginRequest`. `evict`
     * says which entries a listed change makes stale; without it, any change empties this cache.
     */
    cached<Row>(
      read: (key: string) => Promise<Row | undefined>,
      evict?: (change: Change, entries: CacheEntries<Row>) => void,
    ) {
      // Rows wrapped, as lru-cache stores no undefined (a key that does not exist is cached too).
      const entries = new LRUCache<string, { row: Row | undefined }>({ max: MAX_ENTRIES });
      /** Reads in flight, by key; one marked stale is not stored when it ends. */
      const reading = new Map<string, Set<{ stale: boolean }>>();
      const markStale = (fills: Iterable<{ stale: boolean }>) => {
        for (const fill of fills) fill.stale = true;
      };
      const clear = () => {
        entries.clear();
        for (const fills of reading.values()) markStale(fills);
      };
      const cacheEntries: CacheEntries<Row> = {
        delete(key) {
          entries.delete(key);
          markStale(reading.get(key) ?? []);
        },
        deleteWhere(stale) {
          const doomed = [...entries.entries()].filter(([, { row }]) => stale(row));
          for (const [key] of doomed) entries.delete(key);
          // What a read in flight will hold is not known yet: none of them is kept.
          for (const fills of reading.values()) markStale(fills);
        },
      };
      caches.push({
        clear,
        evict: evict ? (change) => evict(change, cacheEntries) : clear,
      });
      return async (_checked: HotRead, key: string): Promise<Row | undefined> => {
        const hit = entries.get(key);
        if (hit) {
          lookups.hits++;
          return hit.row;
        }
        lookups.misses++;
        const fill = { stale: false };
        const fills = reading.get(key) ?? new Set();
        reading.set(key, fills.add(fill));
        try {
          const row = await read(key);
          if (!fill.stale) entries.set(key, { row });
          return row;
        } finally {
          fills.delete(fill);
          if (fills.size === 0) reading.delete(key);
        }
      };
    },
  };
}

/**
 * Runs `check` on behalf of many callers: a call resolves, to what the run answered, when a run
 * that started after it ends.
 * Callers join the next run until it starts. Every run starts in the check phase of the event
 * loop (`setImmediate`), the first one after the call or after the run before it ends, so the
 * callers read from the sockets in a whole turn share one run.
 */
export function shareChecks<T>(check: () => Promise<T>): () => Promise<T> {
  let next: PromiseWithResolvers<T> | undefined;
  let running = false;
  const run = async () => {
    const batch = next as PromiseWithResolvers<T>;
    next = undefined;
    running = true;
    try {
      batch.resolve(await check());
    } catch (error) {
      batch.reject(error);
      // Those that joined while it failed would wait for a second check against the same fault
      // (a hung database: a second full deadline); they fail with it, and never trust the cache.
      // (`next` was cleared before the await; callers may have set it since.)
      const joined = next as PromiseWithResolvers<T> | undefined;
      joined?.reject(error);
      next = undefined;
    } finally {
      running = false;
      if (next) setImmediate(run);
    }
  };
  return () => {
    if (!next) {
      next = Promise.withResolvers<T>();
      if (!running) setImmediate(run);
    }
    return next.promise;
  };
}
