import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { networkInterfaces } from "node:os";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createTestDatabase, type TestDatabase, testEngines } from "@agentpass/db/testing";
import { openTestIdentity } from "./support/harness.ts";

const BIN = fileURLToPath(new URL("../src/bin.ts", import.meta.url));

/** This machine's own addresses that are not loopback: where a wildcard listener would answer. */
const OWN_ADDRESSES = Object.values(networkInterfaces())
  .flat()
  .filter((info) => info && !info.internal && !info.address.startsWith("fe80:"))
  .map((info) => info?.address as string);

/** `agentpass-server serve` on a port it picks, with `env`; resolves once it says where. */
function serve(database: TestDatabase, env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, [BIN, "serve"], {
    env: {
      PATH: process.env.PATH ?? "",
      DATA_DIR: database.dataDir,
      DATABASE_URL: database.databaseUrl ?? "",
      PORT: "0",
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  const port = new Promise<number>((resolve, reject) => {
    child.stdout?.on("data", (chunk) => {
      output += chunk;
      const url = /"url":"(http:\/\/[^"]+)"/.exec(output)?.[1];
      if (url) resolve(Number(new URL(url).port));
    });
    child.once("exit", (code) => reject(new Error(`serve exited ${code}: ${output}`)));
  });
  return { child, port };
}

/** Whether a TCP connection to `address`:`port` is accepted (all of them on this machine). */
function accepts(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: address, port, timeout: 2000 }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

for (const engine of testEngines()) {
  describe(`where the identity service listens (${engine})`, () => {
    let database: TestDatabase;
    const running: ChildProcess[] = [];
    before(async () => {
      database = await createTestDatabase(engine);
    });
    after(async () => {
      for (const child of running) child.kill();
      await database.drop();
    });

    it("without PUBLIC_URL (development), answers on 127.0.0.1 and ::1 and on no other address", async (t) => {
      const { child, port } = serve(database, {});
      running.push(child);
      const listening = await port;
      for (const loopback of ["127.0.0.1", "[::1]"]) {
        const answer = await fetch(`http://${loopback}:${listening}/healthz`);
        assert.equal(answer.status, 200, loopback);
      }
      if (OWN_ADDRESSES.length === 0) return t.skip("this machine has no non-loopback address");
      for (const address of OWN_ADDRESSES) {
        assert.equal(await accepts(address, listening), false, `refused on ${address}`);
      }
    });

    it("with PUBLIC_URL set, listens on every interface as before", async (t) => {
      if (OWN_ADDRESSES.length === 0) return t.skip("this machine has no non-loopback address");
      const { child, port } = serve(database, {
        PUBLIC_URL: "http://agentpass.test",
        // Off loopback a service mails its sign-in codes: it does not start without SMTP.
        SMTP_URL: "smtp://127.0.0.1:9",
      });
      running.push(child);
      const listening = await port;
      for (const address of [...OWN_ADDRESSES, "127.0.0.1", "::1"]) {
        assert.ok(await accepts(address, listening), `accepted on ${address}`);
      }
    });
  });
}

/** `serve` run to its end: its exit code and what it wrote on stderr. */
function serveToExit(database: TestDatabase, env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN, "serve"], {
    env: {
      PATH: process.env.PATH ?? "",
      DATA_DIR: database.dataDir,
      DATABASE_URL: database.databaseUrl ?? "",
      PORT: "0",
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.once("exit", (code) => resolve({ code, stderr })),
  );
}

describe("development is where the service listens, not what PUBLIC_URL says", () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase("sqlite");
  });
  after(() => database.drop());

  for (const [host, publicUrl] of [
    ["0.0.0.0", undefined], // the image: HOST=0.0.0.0, no PUBLIC_URL
    ["0.0.0.0", "http://localhost:8080"], // compose: a published port on every interface
    ["::", undefined],
    ["192.168.1.20", "http://127.0.0.1:4000"],
  ] as const) {
    it(`does not start on HOST=${host}${publicUrl ? ` with PUBLIC_URL=${publicUrl}` : ""} without SMTP: codes would go to the log of a service others reach`, async () => {
      const { code, stderr } = await serveToExit(database, {
        HOST: host,
        ...(publicUrl && { PUBLIC_URL: publicUrl }),
      });
      assert.equal(code, 1);
      assert.equal(
        stderr.trim(),
        `agentpass-server: Invalid SMTP_URL: required unless in development (listening on loopback only, PUBLIC_URL http on a loopback host): HOST=${host} answers other machines`,
      );
    });
  }

  it("on HOST=0.0.0.0 with SMTP, fetches no client document from a loopback address", async () => {
    const received: string[] = [];
    const documents = createServer((request, response) => {
      received.push(request.url ?? "");
      response.end("{}");
    });
    await new Promise<void>((resolve) => documents.listen(0, "127.0.0.1", resolve));
    const { port } = documents.address() as AddressInfo;
    const identity = await openTestIdentity("sqlite", {
      HOST: "0.0.0.0",
      SMTP_URL: "smtp://127.0.0.1:9",
    });
    try {
      const answer = await identity.app.request("/oauth/device_authorization", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          client_id: `http://127.0.0.1:${port}/internal/admin?action=x`,
        }).toString(),
      });
      assert.equal(answer.status, 401);
      assert.equal(((await answer.json()) as { error: string }).error, "invalid_client");
      assert.deepEqual(received, [], "nothing was sent to the loopback address");
    } finally {
      await identity.close();
      documents.close();
    }
  });
});
