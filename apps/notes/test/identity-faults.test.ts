import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startTestIdentityService, type TestIdentityService } from "@agentpass/identity/testing";
import pino from "pino";
import { loadNotesConfig } from "../src/config.ts";
import { type NotesService, openNotesService } from "../src/service.ts";

type Fault = "none" | "refuse" | "hang" | "slow";
const TIMEOUT_MS = 1000;

/**
 * A TCP proxy between the notes API and the identity service that can refuse connections
 * (its port closed), hang (accept, never answer), or pass answers on 3 s late.
 */
async function startFaultyProxy(target: URL) {
  let fault: Fault = "none";
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => {});
    if (fault === "hang") return;
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(upstream);
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
    const delay = fault === "slow" ? 3000 : 0;
    client.on("data", (chunk) => upstream.write(chunk));
    upstream.on("data", (chunk) => {
      if (delay === 0) client.write(chunk);
      else setTimeout(() => client.writable && client.write(chunk), delay);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const dropConnections = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    async set(next: Fault) {
      dropConnections(); // kept-alive connections must not outlive a change of fault
      if (fault === "refuse" && next !== "refuse") {
        await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
      }
      if (next === "refuse") await new Promise<void>((resolve) => server.close(() => resolve()));
      fault = next;
    },
    close: () => {
      dropConnections();
      return new Promise<void>((resolve) =>
        server.listening ? server.close(() => resolve()) : resolve(),
      );
    },
  };
}

describe("notes API when the identity service fails", () => {
  let identity: TestIdentityService;
  let proxy: Awaited<ReturnType<typeof startFaultyProxy>>;
  let notes: NotesService;
  let dataDir: string;
  const email = "faults@example.com";
  /** What the notes API logged, one parsed JSON line each. */
  const logged: { level: number; msg: string; reason?: string }[] = [];

  before(async () => {
    identity = await startTestIdentityService();
    const partner = await identity.createPartner({ name: "Notes", ownerEmail: "op@example.com" });
    const partnerKey = await identity.createPartnerKey(partner.id);
    proxy = await startFaultyProxy(new URL(identity.url));
    dataDir = mkdtempSync(join(tmpdir(), "agentpass-faults-"));
    const loaded = loadNotesConfig({
      DATA_DIR: dataDir,
      AGENTPASS_URL: proxy.url,
      AGENTPASS_PARTNER_KEY: partnerKey.key,
      AGENTPASS_TIMEOUT_MS: String(TIMEOUT_MS),
      LOG_LEVEL: "silent",
    });
    if (!loaded.ok) throw new Error(loaded.error);
    const logger = pino(
      { level: "warn" },
      { write: (line: string) => logged.push(JSON.parse(line)) },
    );
    notes = await openNotesService(loaded.config, { logger });
    await notes.ctx.store.addUser(email, Date.now());
  });
  after(async () => {
    await notes.close();
    await proxy.close();
    await identity.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A fresh token each time: the notes API's cache of successes must not hide the fault. */
  async function callWithFreshToken() {
    const { key } = await identity.createUserKey(email);
    const minted = await fetch(`${identity.url}/api/session-tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
    });
    const { sessionToken } = (await minted.json()) as { sessionToken: string };
    const response = await notes.request("/api/notes", {
      headers: { "x-session-token": sessionToken },
    });
    return { status: response.status, body: await response.json(), response };
  }

  for (const fault of ["refuse", "hang", "slow"] as const) {
    // No bound in ms (a busy machine stretches those): AgentPass refusing or never answering
    // leaves the timeout as the only way to an answer, and its answer 3 s late would be a 200.
    it(`answers 503 at its timeout, not with AgentPass's answer, when AgentPass ${fault === "slow" ? "answers after 3 s" : `${fault}s`}, and recovers`, {
      timeout: 60_000,
    }, async () => {
      assert.equal((await callWithFreshToken()).status, 200, "healthy before");
      await proxy.set(fault);
      const linesBefore = logged.length;
      for (let i = 0; i < 3; i++) {
        const failed = await callWithFreshToken();
        assert.equal(failed.status, 503, "never fail-open, never a 401");
        assert.deepEqual(failed.body, {
          error: "Identity service unavailable",
          code: "identity_unavailable",
        });
        assert.equal(failed.response.headers.get("retry-after"), "5");
      }
      // The operator learns why, once per reason every 10 s (the first fault logs it).
      const why = logged.slice(linesBefore).filter((line) => line.msg.startsWith("answered 503"));
      if (fault === "refuse") {
        assert.equal(why.length, 1, JSON.stringify(logged.slice(linesBefore)));
        assert.equal(why[0]?.reason, "network_error");
      }
      await proxy.set("none");
      // Until it answers 200, however long a busy machine takes (the test's timeout is the
      // backstop).
      let recovered = await callWithFreshToken();
      while (recovered.status !== 200) recovered = await callWithFreshToken();
    });
  }
});
