import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { type Engine, testEngines } from "@agentpass/db/testing";
import { issueAuthorizationCode, registerClient } from "../src/domain/oauth.ts";
import { startWebSession } from "../src/domain/web-sessions.ts";
import { createDatabaseRateLimitStore } from "../src/infra/rate-limit.ts";
import { purgeExpired, UNUSED_CLIENT_LIFETIME_MS } from "../src/store/purge.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { webClient } from "./support/web-client.ts";

const REDIRECT_URI = "http://127.0.0.1:9/callback";
const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

interface DocumentsOptions {
  host?: string;
  hold?: boolean;
  only?: string;
}

/**
 * A server of Client ID Metadata Documents on `host`: every path `/….json` is a valid document
 * whose client id is its own URL, or, with `only`, only `/${only}.json` is (others are 404). It
 * counts the requests it received; with `hold`, it answers none of them until the test calls
 * `release`.
 */
async function startDocuments(options: DocumentsOptions = {}) {
  const host = options.host ?? "127.0.0.1";
  const received: string[] = [];
  const held: { response: ServerResponse; body: string }[] = [];
  const arrivals: { count: number; resolve: () => void }[] = [];
  const server = createServer((request, response) => {
    const clientId = `http://${host}:${(server.address() as AddressInfo).port}${request.url}`;
    received.push(clientId);
    const body = JSON.stringify({
      client_id: clientId,
      client_name: "Budgeted agent",
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: "none",
    });
    if (options.only !== undefined && request.url !== `/${options.only}.json`) {
      response.statusCode = 404;
      response.end("Not found");
    } else if (options.hold) held.push({ response, body });
    else response.end(body);
    for (const arrival of arrivals.filter((a) => received.length >= a.count)) arrival.resolve();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    received,
    clientId: (name: string) => `http://${host}:${port}/${name}.json`,
    /** Settles once the server has received `count` requests in all. */
    arrived(count: number) {
      if (received.length >= count) return Promise.resolve();
      return new Promise<void>((resolve) => arrivals.push({ count, resolve }));
    },
    release() {
      for (const { response, body } of held.splice(0)) response.end(body);
    },
    async close() {
      this.release();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function authorizePath(clientId: string) {
  return `/oauth/authorize?${new URLSearchParams({
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    response_type: "code",
    code_challenge: CHALLENGE,
    code_challenge_method: "S256",
  })}`;
}

/**
 * POST /oauth/device_authorization for `clientId`: an unauthenticated request that resolves it,
 * from `from` when the service trusts the loopback proxy (TRUST_PROXY).
 */
function startDeviceLogin(identity: TestIdentity, clientId: string, from?: string) {
  return identity.app.request("/oauth/device_authorization", {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      ...(from && { "x-forwarded-for": from }),
    },
    body: new URLSearchParams({ client_id: clientId }).toString(),
  });
}

/**
 * On PostgreSQL the counters window by the database's clock, which the test cannot hold: wait,
 * if need be, until the current window has 10 s left, so that a test's hits share one window.
 */
async function awaitFreshWindow(engine: Engine, identity: TestIdentity, windowMs: number) {
  if (engine !== "postgres") return;
  const store = createDatabaseRateLimitStore(identity.service.database);
  const { resetMs } = await store.hit(`window-probe:${randomUUID()}`, windowMs);
  if (resetMs < 10_000) await sleep(resetMs + 10);
}

for (const engine of testEngines()) {
  describe(`bounded cost of OAuth's unauthenticated actions (${engine})`, () => {
    const opened: TestIdentity[] = [];
    const servers: { close(): Promise<void> }[] = [];
    after(async () => {
      for (const server of servers) await server.close();
      for (const identity of opened) await identity.close();
    });

    async function open(env: Record<string, string>) {
      const identity = await openTestIdentity(engine, env);
      opened.push(identity);
      return identity;
    }

    async function documents(options: DocumentsOptions = {}) {
      const started = await startDocuments(options);
      servers.push(started);
      return started;
    }

    /** A browser signed in as a new account. */
    async function signedIn(identity: TestIdentity) {
      const account = await identity.account();
      const browser = webClient(identity.app);
      browser.jar.set("agentpass_session", await startWebSession(identity.ctx, account.id));
      return browser;
    }

    it("answers revocations past the address's budget 429 temporarily_unavailable, with Retry-After", async () => {
      const identity = await open({ REVOCATIONS_PER_MINUTE: "3" });
      await awaitFreshWindow(engine, identity, 60_000);
      const revoke = () =>
        identity.app.request("/oauth/revoke", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "token=apu_not-a-token",
        });
      for (let i = 0; i < 3; i++) assert.equal((await revoke()).status, 200);
      const refused = await revoke();
      assert.equal(refused.status, 429);
      assert.deepEqual(await refused.json(), {
        error: "temporarily_unavailable",
        error_description: "Too many revocations from this address",
      });
      assert.ok(Number(refused.headers.get("retry-after")) >= 1);
      assert.equal(refused.headers.get("ratelimit-limit"), "3");
      assert.equal(refused.headers.get("ratelimit-remaining"), "0");
      assert.equal(refused.headers.get("cache-control"), "no-store");
    });

    it("registers at most the address's budget of clients, then answers 429 and stores none", async () => {
      const identity = await open({ CLIENT_REGISTRATIONS_PER_HOUR: "2" });
      await awaitFreshWindow(engine, identity, 60 * 60_000);
      const register = () =>
        identity.app.request("/oauth/register", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: "Agent" }),
        });
      assert.equal((await register()).status, 201);
      assert.equal((await register()).status, 201);
      const refused = await register();
      assert.equal(refused.status, 429);
      assert.equal(((await refused.json()) as { error: string }).error, "temporarily_unavailable");
      assert.ok(Number(refused.headers.get("retry-after")) >= 1);
      const stored = await identity.db
        .selectFrom("oauth_clients")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirstOrThrow();
      assert.equal(Number(stored.n), 2);
    });

    it("refuses a client_name longer than a consent page shows, instead of cutting it", async () => {
      const identity = await open({});
      const register = (client_name: string) =>
        identity.app.request("/oauth/register", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name }),
        });
      assert.equal((await register("n".repeat(100))).status, 201);
      const long = await register("n".repeat(101));
      assert.equal(long.status, 400);
      assert.equal(((await long.json()) as { error: string }).error, "invalid_client_metadata");
    });

    it("purges a registered client a day after it registered unless a code was issued to it", async () => {
      const identity = await open({});
      const { db } = identity;
      const register = async () => {
        const registered = await registerClient(identity.ctx, { redirect_uris: [REDIRECT_URI] });
        if (!registered.ok) throw new Error(registered.description);
        return registered.client;
      };
      const unused = await register();
      const used = await register();
      const account = await identity.account();
      await issueAuthorizationCode(
        identity.ctx,
        {
          client: used,
          redirectUri: REDIRECT_URI,
          state: undefined,
          codeChallenge: CHALLENGE,
          resource: null,
          scope: undefined,
          dpopJkt: null,
        },
        account.id,
      );
      const purge = () =>
        purgeExpired({ write: (work) => work(db), engine }, identity.now()).then(
          (deleted) => deleted.oauth_clients,
        );
      identity.advance(UNUSED_CLIENT_LIFETIME_MS - 1);
      assert.equal(await purge(), 0, "kept for a day");
      assert.ok(await identity.ctx.oauth.findClient(unused.clientId));
      identity.advance(2);
      assert.equal(await purge(), 1);
      assert.equal(await identity.ctx.oauth.findClient(unused.clientId), undefined);
      assert.ok(await identity.ctx.oauth.findClient(used.clientId), "a used client stays");
    });

    it("counts metadata document fetches per client address before sending them; cached ones are free", async () => {
      const identity = await open({ CLIENT_DOCUMENT_FETCHES_PER_MINUTE: "2" });
      await awaitFreshWindow(engine, identity, 60_000);
      const server = await documents();
      const browser = await signedIn(identity);
      for (const name of ["one", "two"]) {
        const consent = await browser.get(authorizePath(server.clientId(name)));
        assert.equal(consent.status, 200);
        assert.match(await consent.text(), /Budgeted agent/);
      }
      const refused = await browser.get(authorizePath(server.clientId("three")));
      assert.equal(refused.status, 400);
      assert.match(await refused.text(), /Too many client metadata documents fetched/);
      assert.deepEqual(server.received, [server.clientId("one"), server.clientId("two")]);
      // The same address, unauthenticated: refused too, and still nothing sent.
      const device = await startDeviceLogin(identity, server.clientId("four"));
      assert.equal(device.status, 429);
      assert.equal(((await device.json()) as { error: string }).error, "temporarily_unavailable");
      assert.ok(Number(device.headers.get("retry-after")) >= 1);
      assert.equal(server.received.length, 2);
      const cached = await browser.get(authorizePath(server.clientId("one")));
      assert.equal(cached.status, 200, "a cached document is not counted");
    });

    it("counts failed metadata document fetches per host name, each host on its own", async () => {
      const identity = await open({ CLIENT_DOCUMENT_FETCHES_PER_HOST_PER_MINUTE: "2" });
      await awaitFreshWindow(engine, identity, 60_000);
      const first = await documents({ host: "127.0.0.1", only: "real" });
      const second = await documents({ host: "127.0.0.1", only: "real" });
      const other = await documents({ host: "127.0.0.2", only: "real" });
      const browser = await signedIn(identity);
      assert.equal((await browser.get(authorizePath(first.clientId("a")))).status, 400);
      assert.equal((await browser.get(authorizePath(second.clientId("b")))).status, 400);
      const refused = await browser.get(authorizePath(second.clientId("c")));
      assert.equal(refused.status, 400);
      assert.match(await refused.text(), /from this host/);
      assert.equal(first.received.length + second.received.length, 2, "c was not fetched");
      assert.equal((await browser.get(authorizePath(other.clientId("real")))).status, 200);
      assert.equal((await browser.get(authorizePath(other.clientId("d")))).status, 400);
      const valid = await documents({ host: "127.0.0.2" });
      for (const name of ["e", "f", "g"]) {
        const consent = await browser.get(authorizePath(valid.clientId(name)));
        assert.equal(consent.status, 200, "valid documents spend no failures");
      }
    });

    it("lets a real client's people through while strangers from many addresses fetch made-up URLs on its host", async () => {
      // Three addresses of 20 made-up URLs each: more than the host's failures may be.
      const identity = await open({
        TRUST_PROXY: "127.0.0.1/32,::1/128",
        CLIENT_DOCUMENT_FETCHES_PER_HOST_PER_MINUTE: "30",
      });
      await awaitFreshWindow(engine, identity, 60_000);
      const host = await documents({ only: "real" });
      const browser = await signedIn(identity);
      const real = authorizePath(host.clientId("real"));
      assert.equal((await browser.get(real)).status, 200, "the client's document, fetched once");
      identity.advance(5 * 60_000 + 1); // the cached copy expires: the next visit refetches it

      const statuses = new Map<number, number>();
      for (const stranger of ["198.51.100.1", "198.51.100.2", "198.51.100.3"]) {
        for (let i = 0; i < 20; i++) {
          const made = host.clientId(`made-up-${stranger}-${i}`);
          const { status } = await startDeviceLogin(identity, made, stranger);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      }
      assert.ok((statuses.get(429) ?? 0) > 0, `strangers were refused: ${[...statuses]}`);
      const fetchedBefore = host.received.length;
      const consent = await browser.get(real);
      assert.equal(consent.status, 200);
      assert.match(await consent.text(), /Budgeted agent/);
      assert.equal(host.received.length, fetchedBefore + 1, "refetched on its own budget");
      const device = await startDeviceLogin(identity, host.clientId("real"), "198.51.100.1");
      assert.equal(device.status, 200, "its devices too, from any address");
    });

    it("fetches at most the cap of documents at once, refusing more at once instead of queueing", async () => {
      const identity = await open({ CLIENT_DOCUMENT_FETCHES_AT_ONCE: "2" });
      const server = await documents({ hold: true });
      const browser = await signedIn(identity);
      const waiting = ["one", "two"].map((name) =>
        browser.get(authorizePath(server.clientId(name))),
      );
      await server.arrived(2);
      // Whichever comes first: the third request's answer, or its fetch reaching the server.
      const third = browser.get(authorizePath(server.clientId("three")));
      const first = await Promise.race([
        third.then(() => "answered"),
        server.arrived(3).then(() => "fetched"),
      ]);
      assert.equal(first, "answered", "past the cap, nothing more is fetched");
      const refused = await third;
      assert.equal(refused.status, 400);
      assert.match(await refused.text(), /being fetched right now/);
      const device = await startDeviceLogin(identity, server.clientId("four"));
      assert.equal(device.status, 503);
      assert.equal(((await device.json()) as { error: string }).error, "temporarily_unavailable");
      assert.equal(server.received.length, 2);

      server.release();
      for (const answer of await Promise.all(waiting)) assert.equal(answer.status, 200);
      // A refusal for being busy is not remembered: once fetches end, the client is known.
      const again = browser.get(authorizePath(server.clientId("three")));
      await server.arrived(3);
      server.release();
      assert.equal((await again).status, 200);
    });
  });
}
