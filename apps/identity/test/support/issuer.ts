import { type Engine, freePort } from "@agentpass/db/testing";
import { startServer } from "@agentpass/http";
import { openTestIdentity } from "./harness.ts";

/**
 * The service on a real port of 127.0.0.1, its PUBLIC_URL that address, on the wall clock: the
 * issuer a stock OAuth client (openid-client, a browser) discovers from its URL alone.
 */
export async function startTestIssuer(engine: Engine) {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const identity = await openTestIdentity(engine, { PUBLIC_URL: issuer }, { realClock: true });
  const server = await startServer(identity.service, { port, host: "127.0.0.1" });
  return {
    identity,
    issuer,
    async close() {
      await server.close();
      await identity.database.drop();
    },
  };
}

export type TestIssuer = Awaited<ReturnType<typeof startTestIssuer>>;
