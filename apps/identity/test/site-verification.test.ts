import assert from "node:assert/strict";
import { createServer, type RequestListener } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { createLoopbackClient } from "@agentpass/http";
import { createApp } from "../src/http/app.ts";
import { deriveFlashKey } from "../src/infra/crypto.ts";
import { createMailer } from "../src/infra/mailer.ts";
import { createMemoryRateLimitStore } from "../src/infra/rate-limit.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { type WebClient, webClient } from "./support/web-client.ts";

const WELL_KNOWN = "/.well-known/agentpass-verification.txt";

interface DirectoryEntry {
  id: string;
  name: string;
  website: string | null;
  verified: boolean;
  resembles: string | null;
}

/**
 * A partner's website on loopback: it answers with whatever the test sets, and counts the
 * connections and requests it got.
 */
async function startSite() {
  let handler: RequestListener = (_request, response) => {
    response.statusCode = 404;
    response.end();
  };
  const paths: string[] = [];
  let connections = 0;
  const server = createServer((request, response) => {
    paths.push(request.url ?? "");
    handler(request, response);
  });
  server.on("connection", () => {
    connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    paths,
    connections: () => connections,
    serve(next: RequestListener) {
      handler = next;
    },
    /** Serves `lines` as the verification file. */
    serveFile(...lines: string[]) {
      handler = (request, response) => {
        response.statusCode = request.url === WELL_KNOWN ? 200 : 404;
        response.end(request.url === WELL_KNOWN ? lines.join("\n") : "");
      };
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

for (const engine of testEngines()) {
  describe(`partner website verification (${engine})`, () => {
    let identity: TestIdentity;
    let mailbox: Mailbox;
    let site: Awaited<ReturnType<typeof startSite>>;

    before(async () => {
      mailbox = await startMailbox();
      site = await startSite();
      // No PUBLIC_URL: http://localhost, the development setting, where http and loopback
      // websites can be checked.
      identity = await openTestIdentity(engine, { SMTP_URL: mailbox.url });
    });
    after(async () => {
      await identity.close();
      await site.close();
      await mailbox.close();
    });

    async function signIn(client: WebClient) {
      const email = `owner-${crypto.randomUUID()}@example.com`;
      const since = mailbox.mails.length;
      assert.equal((await client.post("/sign-in", { email, next: "/partners" })).status, 303);
      const { code } = signInSecrets(await mailbox.next(email, since));
      assert.equal((await client.post("/sign-in/code", { code })).status, 303);
    }

    async function signedIn(app = identity.app, base?: string) {
      const client = webClient(app, base);
      await signIn(client);
      return client;
    }

    /** Creates a listed partner; returns its page's path, its id and the token it shows. */
    async function createPartner(client: WebClient, name: string, website: string) {
      const created = await client.post("/partners", { name, website, listed: "yes" });
      assert.equal(created.status, 303);
      const path = created.headers.get("location") ?? "";
      const token = tokenIn(await client.text(path));
      return { path, id: path.split("/").at(-1) ?? "", token };
    }

    function tokenIn(page: string): string {
      const token = /id="site-token">([^<]+)</.exec(page)?.[1];
      assert.ok(token, "the partner page shows its token");
      return token;
    }

    async function directory(): Promise<Map<string, DirectoryEntry>> {
      const response = await identity.app.request("/api/partners");
      const { partners } = (await response.json()) as { partners: DirectoryEntry[] };
      return new Map(partners.map((partner) => [partner.id, partner]));
    }

    /** The card of one partner on the directory page. */
    async function cardOf(id: string): Promise<string> {
      const page = await webClient(identity.app).text("/directory");
      const card = new RegExp(`<li class="card" data-partner="${id}">.*?</li>`, "s").exec(page);
      assert.ok(card, `the directory page lists ${id}`);
      return card[0];
    }

    /** Presses "Check now": the partner's page it leads to tells the outcome. */
    const check = (client: WebClient, path: string) => client.submit(`${path}/site-check`, {});

    it("shows the owner a token, verifies the website once it serves the token, and the directory says so; another origin ends it", async () => {
      const owner = await signedIn();
      const partner = await createPartner(owner, "Tide Tables", site.origin);
      assert.match(partner.token, /^agentpass-site-verification=[A-Za-z0-9_-]{43}$/);
      const page = await owner.text(partner.path);
      assert.equal(tokenIn(page), partner.token, "the token stays the same");
      assert.match(page, new RegExp(`id="site-url">${site.origin}${WELL_KNOWN}<`));
      assert.match(page, /Not verified/);
      assert.equal((await directory()).get(partner.id)?.verified, false);
      assert.match(await cardOf(partner.id), /Website not verified/);

      site.serveFile("# AgentPass", `  ${partner.token}  `, "another-partner-token");
      const checked = await check(owner, partner.path);
      assert.equal(checked.status, 200);
      const shown = await checked.text();
      assert.match(shown, /Your website is verified/);
      assert.match(
        shown,
        new RegExp(`Verified: you proved you control <code>${site.origin}</code>`),
      );
      assert.deepEqual((await directory()).get(partner.id), {
        id: partner.id,
        name: "Tide Tables",
        description: null,
        website: site.origin,
        verified: true,
        resembles: null,
      });
      const card = await cardOf(partner.id);
      assert.match(card, /Website verified/);
      assert.doesNotMatch(card, /not verified/i);
      const stored = await identity.ctx.store.findPartner(partner.id);
      assert.equal(stored?.siteVerifiedAt, identity.now());
      assert.equal(stored?.siteVerifiedOrigin, site.origin);

      const save = (website: string) =>
        owner.post(partner.path, { name: "Tide Tables", website, listed: "yes" });
      await save(`${site.origin}/tides`);
      assert.equal((await directory()).get(partner.id)?.verified, true, "same origin, same proof");
      await save(`http://localhost:${site.port}/`);
      assert.equal((await directory()).get(partner.id)?.verified, false);
      assert.equal((await identity.ctx.store.findPartner(partner.id))?.siteVerifiedAt, null);
      await save(site.origin);
      assert.equal(
        (await directory()).get(partner.id)?.verified,
        false,
        "going back needs a new check",
      );
      assert.match(await cardOf(partner.id), /Website not verified/);
    });

    it("leaves the website unverified, with a message, when the file is wrong, missing, redirected, too large or too slow", async () => {
      const owner = await signedIn();
      const partner = await createPartner(owner, "Moon Phases", site.origin);
      // A check that gives up after 200 ms, not 5 s: an app of its own on the same service.
      const hurriedApp = createLoopbackClient(
        createApp({
          ctx: identity.ctx,
          logger: identity.service.logger,
          publicUrl: "http://localhost:4000",
          development: true,
          mailer: createMailer(undefined, "test@example.com", identity.service.logger),
          rateLimitStore: createMemoryRateLimitStore(identity.ctx.clock),
          rateLimitSettings: {
            mintsPerMinute: 60,
            failedVerifiesPerMinute: 60,
            badKeysPerMinute: 60,
            revocationsPerMinute: 60,
            clientRegistrationsPerHour: 60,
            clientDocumentFetchesPerMinute: 20,
            clientDocumentFetchesPerHostPerMinute: 60,
            clientDocumentFetchesAtOnce: 16,
          },
          trustProxy: "none",
          fetchTimeoutMs: 200,
          flashKey: deriveFlashKey("the secret of this test's second app"),
        }).listener,
      );
      const hurried = webClient(hurriedApp);
      for (const [name, value] of owner.jar) hurried.jar.set(name, value);

      const hang: RequestListener = () => {};
      const endless: RequestListener = (_request, response) => {
        response.write(`${partner.token}\n`);
        const more = setInterval(() => response.write("x".repeat(1024)), 5);
        response.on("close", () => clearInterval(more));
      };
      const cases: [string, RequestListener | string, RegExp, WebClient][] = [
        ["wrong content", "agentpass-site-verification=not-this-one", /does not hold/, owner],
        ["token inside a line", `token: ${partner.token}`, /does not hold/, owner],
        ["404", (_q, r) => r.writeHead(404).end(partner.token), /answered with status 404/, owner],
        [
          "redirect",
          (_q, r) => r.writeHead(302, { location: "/token.txt" }).end(),
          /answered with a redirect \(status 302\); AgentPass follows none/,
          owner,
        ],
        ["body over 4 KiB", endless, /is larger than 4 KiB/, owner],
        ["no answer in time", hang, /did not send the file in time/, hurried],
      ];
      for (const [label, answer, message, client] of cases) {
        site.serveFile(partner.token);
        await check(owner, partner.path);
        assert.equal((await directory()).get(partner.id)?.verified, true, label);

        if (typeof answer === "string") site.serveFile(answer);
        else site.serve(answer);
        await client.text(partner.path); // this client's form token
        // No bound in ms (a busy machine stretches those): a site that never answers, or never
        // stops sending, gets an answer only because the check gave up on it.
        const response = await check(client, partner.path);
        assert.equal(response.status, 200, label);
        const page = await response.text();
        assert.match(page, /<p class="error" role="alert">Not verified: /, label);
        assert.match(page, message, label);
        assert.equal((await directory()).get(partner.id)?.verified, false, label);
        assert.equal((await identity.ctx.store.findPartner(partner.id))?.siteVerifiedAt, null);
        assert.match(await cardOf(partner.id), /Website not verified/, label);
      }
      assert.ok(!site.paths.includes("/token.txt"), "the redirect was not followed");
      await hurriedApp.close();
    });

    it("in production, refuses an http website, and an https one whose name is a loopback address, without connecting", async () => {
      const production = await openTestIdentity(engine, {
        PUBLIC_URL: "https://agentpass.example",
        SMTP_URL: mailbox.url,
      });
      try {
        const owner = await signedIn(production.app, "https://agentpass.example");
        const connections = site.connections();
        const partner = await createPartner(owner, "Ebb And Flow", site.origin);
        const refused = await (await check(owner, partner.path)).text();
        assert.match(refused, /AgentPass checks only https websites/);
        for (const website of [
          `https://localhost:${site.port}/`,
          `https://127.0.0.1:${site.port}`,
        ]) {
          await owner.post(partner.path, { name: "Ebb And Flow", website, listed: "yes" });
          const page = await (await check(owner, partner.path)).text();
          assert.match(page, /resolves to a private or local address/, website);
        }
        assert.equal(site.connections(), connections, "no connection reached the site");
        assert.equal((await production.ctx.store.findPartner(partner.id))?.siteVerifiedAt, null);
      } finally {
        await production.close();
      }
    });

    it("flags listed partners named like a verified partner, and no other", async () => {
      const real = await signedIn();
      const github = await createPartner(real, "GitHub", site.origin);
      site.serveFile(github.token);
      await check(real, github.path);

      const impostor = await signedIn();
      const lookAlikes = new Map<string, string>();
      for (const name of [
        "GitHub",
        "Github",
        "G1thub",
        "Ｇｉｔｈｕｂ",
        "GitHub!",
        "Gіtһub",
        "G1thu8",
      ]) {
        lookAlikes.set((await createPartner(impostor, name, "https://github.example")).id, name);
      }
      const others = new Map<string, string>();
      for (const name of ["Weather API", "GitLab", "Hub"]) {
        others.set((await createPartner(impostor, name, "https://other.example")).id, name);
      }

      let listed = await directory();
      assert.deepEqual(
        { verified: listed.get(github.id)?.verified, resembles: listed.get(github.id)?.resembles },
        { verified: true, resembles: null },
        "a verified partner is not flagged against itself",
      );
      for (const [id, name] of lookAlikes) {
        assert.deepEqual(
          { verified: listed.get(id)?.verified, resembles: listed.get(id)?.resembles },
          { verified: false, resembles: "GitHub" },
          name,
        );
        const card = await cardOf(id);
        assert.match(card, /Warning: this name looks like GitHub/, name);
        assert.match(card, /Website not verified/, name);
      }
      for (const [id, name] of others) {
        assert.equal(listed.get(id)?.resembles, null, name);
        assert.doesNotMatch(await cardOf(id), /Warning/, name);
      }
      assert.doesNotMatch(await cardOf(github.id), /Warning/);

      // Verified on another website under the same name: the directory cannot tell which one
      // is GitHub, so it flags both.
      const second = await createPartner(impostor, "GitHub", `http://localhost:${site.port}`);
      site.serveFile(github.token, second.token);
      await check(impostor, second.path);
      listed = await directory();
      assert.equal(listed.get(second.id)?.verified, true);
      assert.equal(listed.get(second.id)?.resembles, "GitHub");
      assert.equal(listed.get(github.id)?.resembles, "GitHub");
    });

    it("checks only a partner of the signed-in account, and only with this browser's form token", async () => {
      const owner = await signedIn();
      const partner = await createPartner(owner, "Sea Levels", site.origin);
      site.serveFile(partner.token);
      const stranger = await signedIn();
      assert.equal((await check(stranger, partner.path)).status, 404);
      const forged = await owner.post(`${partner.path}/site-check`, { _csrf: "x".repeat(43) });
      assert.equal(forged.status, 403);
      assert.equal((await directory()).get(partner.id)?.verified, false);
    });
  });
}
