import type pg from "pg";

/** A statement for `Pipeline.query`: named to be prepared once on the connection, or not. */
export interface PipelinedStatement {
  name?: string;
  text: string;
  values: unknown[];
}

/**
 * Short statements of many requests on one PostgreSQL connection, each sent without waiting for
 * the answers of those before it (node-postgres's pipeline mode): the statements of concurrent
 * requests share the connection's writes, its wake-ups and the server's. Each carries its own
 * Sync, so it commits on its own, and one that fails fails alone. The server answers them in
 * order, so a statement waits behind the ones sent before it: only statements of a few rows by
 * index go here (the prepared reads and writes of `prepared-query.ts`), never a search or a
 * transaction (those keep the pool).
 */
export interface Pipeline {
  query<Row>(statement: PipelinedStatement): Promise<Row[]>;
  close(): Promise<void>;
}

/**
 * A `Pipeline` on a connection of `config`, opened on first use and again after it is lost:
 * the server restarted, or a statement went unanswered past `query_timeout`, which node-postgres
 * answers by closing the connection. The statements in flight on a lost connection fail with it
 * (`isDatabaseUnavailable`: the request answers 503); the next one opens a new connection.
 */
export function createPipeline(Client: typeof pg.Client, config: pg.ClientConfig): Pipeline {
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let closed = false;
  let corked = false;

  const open = (): Promise<pg.Client> => {
    const next = new Client({ ...config, pipeline: true });
    // A lost connection is reported here; its statements fail on their own promises.
    const lose = () => {
      if (client === next) client = undefined;
    };
    next.on("error", lose);
    next.on("end", lose);
    connecting = next.connect().then(
      () => {
        connecting = undefined;
        if (closed) {
          void next.end();
          throw new Error("Connection terminated: the pipeline is closed");
        }
        client = next;
        return next;
      },
      (error: unknown) => {
        connecting = undefined;
        throw error;
      },
    );
    return connecting;
  };

  return {
    async query<Row>(statement: PipelinedStatement): Promise<Row[]> {
      if (closed) throw new Error("Connection terminated: the pipeline is closed");
      const connected = client ?? (await (connecting ?? open()));
      // The statements sent together (by one callback and the promise continuations it runs,
      // such as the requests a shared read resumes) leave in one write, held no longer.
      if (!corked) {
        corked = true;
        const stream = connected.connection.stream;
        stream.cork();
        process.nextTick(() => {
          corked = false;
          stream.uncork();
        });
      }
      return (await connected.query(statement)).rows as Row[];
    },
    async close() {
      closed = true;
      const last = client;
      client = undefined;
      await last?.end();
    },
  };
}
