/**
 * The Node reference the Python middlewares are compared with: an Express partner using
 * `agentPassAuth` of @agentpass/verify, configured by AGENTPASS_URL and AGENTPASS_PARTNER_KEY.
 * Prints `{"url": …}` once it listens on 127.0.0.1 (PORT, default any free port).
 */
import type { AddressInfo } from "node:net";
import express from "express";
import { createVerifier } from "../../verify/src/create-verifier.ts";
import { agentPassAuth } from "../../verify/src/express.ts";

const app = express();
app.use(
  "/api",
  agentPassAuth(
    createVerifier({ partnerKey: process.env.AGENTPASS_PARTNER_KEY, onError: () => {} }),
  ),
);
app.get("/api/me", (req, res) => {
  res.json({ email: req.agentpassEmail });
});
const server = app.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}` }));
});
process.once("SIGTERM", () => server.close());
