/** What one item of a batch came to: its value, or the error its caller gets. */
export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

export interface BatchLimits<Item> {
  /** Items a batch holds at most. */
  maxItems: number;
  /** A batch takes no item that would take its sum of `sizeOf` past this (but takes one). */
  maxSize: number;
  sizeOf(item: Item): number;
}

/**
 * Items of one key (the creates of one user) written together: `write(key, items)` runs for a key
 * with the items asked for since its last batch, in the order they were asked, and answers each
 * with its outcome; when it throws, every item of the batch gets its error. One batch of a key
 * runs at a time; batches of different keys run side by side. A key's first batch starts in the
 * event loop's check phase, after the requests read from every socket ready in this turn have
 * asked; those asked while it runs form the next, which starts as soon as it ends.
 */
export function batchesByKey<Item, R>(
  write: (key: string, items: Item[]) => Promise<Outcome<R>[]>,
  limits: BatchLimits<Item>,
): (key: string, item: Item) => Promise<R> {
  const waiting = new Map<string, { item: Item; done: PromiseWithResolvers<R> }[]>();
  /** Keys with a batch started or about to start. */
  const busy = new Set<string>();

  const run = (key: string): void => {
    const queue = waiting.get(key) ?? [];
    let size = 0;
    let taken = 0;
    while (taken < queue.length && taken < limits.maxItems) {
      const next = limits.sizeOf((queue[taken] as (typeof queue)[number]).item);
      if (taken > 0 && size + next > limits.maxSize) break;
      size += next;
      taken++;
    }
    const batch = queue.splice(0, taken);
    if (queue.length === 0) waiting.delete(key);
    write(
      key,
      batch.map(({ item }) => item),
    )
      .then(
        (outcomes) => {
          for (const [index, { done }] of batch.entries()) {
            const outcome = outcomes[index];
            if (outcome?.ok) done.resolve(outcome.value);
            else done.reject(outcome ? outcome.error : new Error("batch gave no outcome"));
          }
        },
        (error: unknown) => {
          for (const { done } of batch) done.reject(error);
        },
      )
      .finally(() => {
        if (waiting.has(key)) run(key);
        else busy.delete(key);
      });
  };

  return (key, item) => {
    const done = Promise.withResolvers<R>();
    let queue = waiting.get(key);
    if (!queue) {
      queue = [];
      waiting.set(key, queue);
    }
    queue.push({ item, done });
    if (!busy.has(key)) {
      busy.add(key);
      setImmediate(run, key);
    }
    return done.promise;
  };
}
