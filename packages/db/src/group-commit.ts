import { type Kysely, sql, type Transaction } from "kysely";

type Work<T> = (trx: Transaction<T>) => Promise<unknown>;

interface Queued<T> {
  work: Work<T>;
  done: PromiseWithResolvers<unknown>;
}

/**
 * SQLite transactions with group commit: the transactions asked for in one turn of the event
 * loop, or while a batch runs, are run together, one after another in one SQLite transaction,
 * each inside its own savepoint, and committed once. A commit costs far more than a small
 * write (the WAL frames of every page it touched, the full-text index's new segment), so under
 * concurrent writes this is where a write's time went.
 *
 * Each transaction still commits or rolls back as a whole: one that throws is rolled back to its
 * savepoint and rejected, the others go on. None resolves before the commit that holds it has
 * succeeded, so nothing acknowledged can be lost; if that commit fails, every transaction of the
 * batch is rejected with its error. On one connection they were serial anyway: they still are.
 */
export function createGroupCommit<T>(db: Kysely<T>) {
  let queue: Queued<T>[] = [];
  let running = false;

  async function run(): Promise<void> {
    const batch = queue;
    queue = [];
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      await db.transaction().execute(async (trx) => {
        for (const { work } of batch) {
          await sql`SAVEPOINT grouped`.execute(trx);
          try {
            const value = await work(trx);
            await sql`RELEASE grouped`.execute(trx);
            outcomes.push({ ok: true, value });
          } catch (error) {
            // A failed rollback leaves the transaction unusable: it fails the whole batch.
            await sql`ROLLBACK TO grouped`.execute(trx);
            await sql`RELEASE grouped`.execute(trx);
            outcomes.push({ ok: false, error });
          }
        }
      });
      for (const [index, { done }] of batch.entries()) {
        const outcome = outcomes[index];
        if (outcome?.ok) done.resolve(outcome.value);
        else done.reject(outcome?.error);
      }
    } catch (error) {
      for (const { done } of batch) done.reject(error);
    } finally {
      if (queue.length > 0) void run();
      else running = false;
    }
  }

  return <R>(work: (trx: Transaction<T>) => Promise<R>): Promise<R> => {
    const done = Promise.withResolvers<unknown>();
    queue.push({ work, done });
    // A batch starts in the event loop's check phase, after the requests read from every
    // socket ready in this turn have asked, each from a callback of its own. Started in a
    // microtask, it would run to its commit before the next socket is read (SQLite answers
    // synchronously), and every batch would hold one transaction. Those asked while it runs
    // form the next batch.
    if (!running) {
      running = true;
      setImmediate(run);
    }
    return done.promise as Promise<R>;
  };
}
