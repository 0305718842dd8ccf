import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createLogger } from "../src/infra/logger.ts";

/** The lines a logger of `createLogger` writes while `log` runs, parsed. */
function linesOf(
  log: (logger: ReturnType<typeof createLogger>) => void,
): Record<string, unknown>[] {
  const written: string[] = [];
  const logger = createLogger("info", { write: (line: string) => written.push(line) });
  log(logger);
  return written.map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("the identity service's logs", () => {
  it("never show a credential or a secret an error carries", () => {
    const error = Object.assign(new Error("refused"), {
      key: "apk_secret_partner_key",
      sessionToken: "aps_secret_token",
    });
    const [line] = linesOf((logger) => {
      logger.warn(
        {
          err: error,
          key: "apu_secret_user_key",
          sessionToken: "aps_secret_token",
          req: { headers: { authorization: "Bearer apk_secret_partner_key" } },
        },
        "refused",
      );
    });
    assert.ok(line);
    assert.doesNotMatch(JSON.stringify(line), /secret/);
    const logged = line.err as Record<string, unknown>;
    assert.equal(logged.message, "refused");
    assert.equal(logged.key, "[Redacted]");
    assert.equal(line.key, "[Redacted]");
  });

  it("writes the access log's fields as they are", () => {
    const fields = { requestId: "r-1", method: "POST", route: "/api/verify", status: 200, ms: 0.4 };
    const [line] = linesOf((logger) => logger.info(fields, "request"));
    assert.deepEqual(
      { ...fields, msg: "request", service: "agentpass-identity" },
      {
        requestId: line?.requestId,
        method: line?.method,
        route: line?.route,
        status: line?.status,
        ms: line?.ms,
        msg: line?.msg,
        service: line?.service,
      },
    );
  });
});
