import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { freePort, testEngines } from "@agentpass/db/testing";
import { type RunningServer, startServer } from "@agentpass/http";
import { generateKey } from "../src/domain/keys.ts";
import { awaitRoomInRateWindow } from "../src/testing.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

const HAPROXY = process.env.HAPROXY_PATH ?? "/usr/sbin/haproxy";
const LIMIT = 5;

/**
 * One mint with an unknown (well-formed) user key, from `localAddress`, with extra headers;
 * answers the status. Unknown keys are limited per client address (BAD_KEYS_PER_MINUTE).
 */
function mintWithUnknownKey(
  url: string,
  localAddress: string,
  headers: Record<string, string> = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = new URL("/api/session-tokens", url);
    const req = request(
      target,
      {
        method: "POST",
        localAddress,
        headers: { authorization: `Bearer ${generateKey("user")}`, ...headers },
      },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** The answers to `count` sends in a row, all within one rate-limit window. */
async function statuses(count: number, send: () => Promise<number>): Promise<number[]> {
  await awaitRoomInRateWindow();
  const answers = [];
  for (let i = 0; i < count; i++) answers.push(await send());
  return answers;
}

const refusedAfterLimit = [...Array(LIMIT).fill(401), 429];

/** Debian's haproxy in front of `backend`, adding X-Forwarded-For as it does in production. */
async function startHaproxy(backend: RunningServer) {
  const dir = mkdtempSync(join(tmpdir(), "agentpass-haproxy-"));
  const port = await freePort();
  writeFileSync(
    join(dir, "haproxy.cfg"),
    `defaults
  mode http
  timeout connect 2s
  timeout client 10s
  timeout server 10s
frontend public
  bind 127.0.0.1:${port}
  option forwardfor
  default_backend identity
backend identity
  server one 127.0.0.1:${backend.port}
`,
  );
  const child: ChildProcess = spawn(HAPROXY, ["-f", join(dir, "haproxy.cfg"), "-db"], {
    stdio: "ignore",
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const up = await fetch(`${url}/healthz`).then(
      (answer) => answer.ok,
      () => false,
    );
    if (up) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    async close() {
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

for (const engine of testEngines()) {
  describe(`per-address limits behind a proxy stay per client (${engine})`, () => {
    /** A service on a real port, trusting what `trustProxy` says, with a low bad-key limit. */
    async function serve(trustProxy: string | undefined, env: Record<string, string> = {}) {
      const identity: TestIdentity = await openTestIdentity(
        engine,
        {
          BAD_KEYS_PER_MINUTE: String(LIMIT),
          ...(trustProxy && { TRUST_PROXY: trustProxy }),
          ...env,
        },
        { realClock: true },
      );
      const server = await startServer(identity.service, { port: 0, host: "127.0.0.1" });
      return {
        url: server.url,
        server,
        close: async () => {
          await server.close();
          await identity.database.drop();
        },
      };
    }

    describe("behind Debian's haproxy", () => {
      let service: Awaited<ReturnType<typeof serve>>;
      let proxy: Awaited<ReturnType<typeof startHaproxy>>;
      before(async () => {
        service = await serve("127.0.0.1/32");
        proxy = await startHaproxy(service.server);
      });
      after(async () => {
        await proxy?.close();
        await service?.close();
      });

      it("limits the attacker, not every client of the proxy, even when it forges the header", async () => {
        const forged = { "x-forwarded-for": "203.0.113.9" };
        const attacker = await statuses(LIMIT + 1, () =>
          mintWithUnknownKey(proxy.url, "127.0.0.2", forged),
        );
        assert.deepEqual(attacker, refusedAfterLimit);
        assert.equal(
          await mintWithUnknownKey(proxy.url, "127.0.0.3"),
          401,
          "another client of the same proxy still gets its own answer",
        );
        assert.equal(
          await mintWithUnknownKey(proxy.url, "127.0.0.4", { "x-forwarded-for": "127.0.0.2" }),
          401,
          "a client naming another's address is still keyed by its own",
        );
      });

      it("keys by the entry the proxy appended, never one the client wrote in front of it", async () => {
        let n = 0;
        // Entries that look like a chain of proxies, ending in another client's address.
        const attacker = await statuses(LIMIT + 1, () =>
          mintWithUnknownKey(proxy.url, "127.0.0.6", {
            "x-forwarded-for": `198.51.100.${++n}, 127.0.0.7`,
          }),
        );
        assert.deepEqual(attacker, refusedAfterLimit);
        assert.equal(
          await mintWithUnknownKey(proxy.url, "127.0.0.7"),
          401,
          "the client it named keeps its own budget",
        );
      });
    });

    describe("with a stand-in proxy (forwarding headers sent straight to the service)", () => {
      let trusting: Awaited<ReturnType<typeof serve>>;
      let untrusting: Awaited<ReturnType<typeof serve>>;
      let rfc7239: Awaited<ReturnType<typeof serve>>;
      before(async () => {
        trusting = await serve("1");
        untrusting = await serve(undefined);
        rfc7239 = await serve("1", { TRUST_PROXY_HEADER: "forwarded" });
      });
      after(async () => {
        await trusting?.close();
        await untrusting?.close();
        await rfc7239?.close();
      });

      it("keys a client by the header its proxy writes, whatever Forwarded header it adds", async () => {
        // The proxy writes X-Forwarded-For; a Forwarded header naming someone else once made
        // the request the proxy's own: a second budget for the asking.
        const proxied = { "x-forwarded-for": "203.0.113.50" };
        const spent = await statuses(LIMIT, () =>
          mintWithUnknownKey(trusting.url, "127.0.0.1", proxied),
        );
        assert.deepEqual(spent, Array(LIMIT).fill(401));
        assert.equal(
          await mintWithUnknownKey(trusting.url, "127.0.0.1", {
            ...proxied,
            forwarded: "for=198.51.100.99",
          }),
          429,
          "the same client, the same budget",
        );
      });

      it("keys IPv6 clients by their /48: rotating /64s of one site does not reset a budget", async () => {
        const from = (address: string) => ({ "x-forwarded-for": address });
        let n = 0;
        const rotating = await statuses(LIMIT + 1, () =>
          mintWithUnknownKey(
            trusting.url,
            "127.0.0.1",
            from(`2001:db8:1:${(++n).toString(16)}::1`),
          ),
        );
        assert.deepEqual(rotating, refusedAfterLimit, "one /64 after another of 2001:db8:1::/48");
        assert.equal(
          await mintWithUnknownKey(trusting.url, "127.0.0.1", from("2001:db8:1:ffff:1:2:3:4")),
          429,
          "the same /48",
        );
        assert.equal(
          await mintWithUnknownKey(trusting.url, "127.0.0.1", from("2001:db8:2::1")),
          401,
          "the next /48",
        );
      });

      it("believes no client-written X-Forwarded-For behind a proxy that writes Forwarded (TRUST_PROXY_HEADER)", async () => {
        // The proxy says who connected to it in RFC 7239 Forwarded; the client adds its own
        // X-Forwarded-For, a new address each time, to get a fresh budget each time.
        let n = 0;
        const rotating = await statuses(LIMIT + 1, () =>
          mintWithUnknownKey(rfc7239.url, "127.0.0.1", {
            forwarded: "for=198.51.100.7",
            "x-forwarded-for": `203.0.113.${++n}`,
          }),
        );
        assert.deepEqual(rotating, refusedAfterLimit, "a client cannot pick its own key");
      });

      it("ignores forwarding headers when no proxy is trusted", async () => {
        let n = 0;
        const rotating = await statuses(LIMIT + 1, () =>
          mintWithUnknownKey(untrusting.url, "127.0.0.5", {
            "x-forwarded-for": `198.51.100.${++n}`,
          }),
        );
        assert.deepEqual(rotating, refusedAfterLimit, "a client cannot pick its own key");
      });
    });
  });
}
