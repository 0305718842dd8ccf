import type { Logger } from "pino";

/** How often one reason is logged while it lasts; the answers meanwhile are counted. */
const EVERY_MS = 10_000;

/**
 * Says in the log why the notes API answered 503 `Identity service unavailable`: the code of
 * what failed (`network_error`, `timeout`, `partner_key_revoked`, …). One line per reason
 * every 10 s at most, with the number of answers since the last line, so an outage is visible
 * at once and does not flood the log.
 */
export function createUnavailableLog(logger: Logger, clock: () => number) {
  const seen = new Map<string, { loggedAt: number; since: number }>();
  return (reason: string): void => {
    const now = clock();
    const last = seen.get(reason);
    if (last && now - last.loggedAt < EVERY_MS) {
      last.since++;
      return;
    }
    logger.warn(
      { reason, answered: (last?.since ?? 0) + 1 },
      "answered 503: AgentPass could not vouch for a session token",
    );
    seen.set(reason, { loggedAt: now, since: 0 });
  };
}
