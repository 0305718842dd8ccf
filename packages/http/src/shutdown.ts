import type { Logger } from "pino";
import type { RunningServer } from "./server.ts";

/**
 * How long requests still in flight may run once the drain ended and the listener closed,
 * before the process gives up on them and exits 1.
 */
export const IN_FLIGHT_GRACE_MS = 10_000;

/**
 * Stops `server` on the first SIGTERM or SIGINT, the same way in every service: `/readyz` turns
 * 503, it serves on for `drainMs`, then closes its listener and every connection as its last
 * request finishes (`RunningServer.close`), and the process exits 0. Only requests still running
 * `IN_FLIGHT_GRACE_MS` after the drain make it exit 1, saying so in the log.
 *
 * @example
 * const server = await startServer(service, { port, host, drainMs });
 * stopOnSignals(server, { drainMs, logger: service.logger });
 */
export function stopOnSignals(
  server: RunningServer,
  options: {
    drainMs: number;
    logger: Logger;
    /** Runs once the server has closed, before the exit (the traces not yet exported). */
    beforeExit?: () => Promise<void>;
  },
): void {
  const exit = (code: number) => process.exit(code);
  const stop = (signal: NodeJS.Signals) => {
    options.logger.info({ signal, drainMs: options.drainMs }, "shutting down");
    const forced = setTimeout(() => {
      options.logger.error(
        { graceMs: IN_FLIGHT_GRACE_MS },
        "forced exit: requests still in flight after the drain",
      );
      exit(1);
    }, options.drainMs + IN_FLIGHT_GRACE_MS);
    forced.unref();
    server.close().then(
      async () => {
        await options.beforeExit?.().catch((error: unknown) => {
          options.logger.warn({ err: error }, "could not flush before exit");
        });
        clearTimeout(forced);
        options.logger.info("stopped");
        exit(0);
      },
      (error: unknown) => {
        options.logger.error({ err: error }, "could not stop cleanly");
        exit(1);
      },
    );
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}
