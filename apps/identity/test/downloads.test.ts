import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { freePort } from "@agentpass/db/testing";
import {
  createApiListener,
  createLoopbackClient,
  type RunningServer,
  startServer,
} from "@agentpass/http";
import pino from "pino";
import { findAccountByEmail } from "../src/domain/accounts.ts";
import { issueKey } from "../src/domain/credentials.ts";
import { createPartner } from "../src/domain/partners.ts";
import { type Downloads, downloadRoutes, readDownloads } from "../src/http/pages/downloads.ts";
import { installCommands } from "../src/http/web/install-commands.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { packedDownloads } from "./support/packed-downloads.ts";
import { webClient } from "./support/web-client.ts";

/** Every URL an install command of `page` names: `npm install [-g] <url>`, `pip install <url>`. */
function installUrls(page: string): string[] {
  return [
    ...page.matchAll(/<code>(?:npm install(?: -g)?|pip install) (https?:\/\/[^<\s]+)<\/code>/g),
  ].map((match) => match[1] ?? "");
}

describe("the packages the identity service serves until they are on a registry", () => {
  let downloads: Downloads;
  let identity: TestIdentity;
  let server: RunningServer;
  let mailbox: Mailbox;
  let publicUrl: string;
  before(async () => {
    downloads = packedDownloads();
    mailbox = await startMailbox();
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    identity = await openTestIdentity("sqlite", {
      PUBLIC_URL: publicUrl,
      SMTP_URL: mailbox.url,
    });
    server = await startServer(identity.service, { port, host: "127.0.0.1" });
  });
  after(async () => {
    await server.close();
    await identity.close();
    await mailbox.close();
  });

  it("serves each package at its URL with its type, length, ETag and caching, HEAD included", async () => {
    for (const [name, type] of [
      ["cli", "application/gzip"],
      ["verify", "application/gzip"],
      ["python", "application/zip"],
    ] as const) {
      const download = downloads[name];
      assert.ok(download, `packages-dist holds the ${name} package`);
      const response = await fetch(`${publicUrl}${download.path}`);
      assert.equal(response.status, 200, download.path);
      assert.equal(response.headers.get("content-type"), type);
      const body = Buffer.from(await response.arrayBuffer());
      assert.equal(Number(response.headers.get("content-length")), body.length);
      assert.deepEqual(body, download.data, "the file as packed");
      const etag = `"${createHash("sha256").update(body).digest("base64url")}"`;
      assert.equal(response.headers.get("etag"), etag);
      assert.equal(response.headers.get("cache-control"), "public, max-age=3600");
      assert.equal(
        response.headers.get("content-disposition"),
        `attachment; filename="${download.file}"`,
      );

      const head = await fetch(`${publicUrl}${download.path}`, { method: "HEAD" });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get("content-length"), String(body.length));
      assert.equal((await head.arrayBuffer()).byteLength, 0);

      const again = await fetch(`${publicUrl}${download.path}`, {
        headers: { "if-none-match": `"other", ${etag}` },
      });
      assert.equal(again.status, 304, "a cached copy is revalidated, not sent again");
      assert.equal(again.headers.get("etag"), etag);
    }
    assert.deepEqual(
      [downloads.cli?.path, downloads.verify?.path],
      ["/downloads/agentpass-cli.tgz", "/downloads/agentpass-verify.tgz"],
      "the npm packages keep one URL across versions",
    );
    assert.match(downloads.python?.path ?? "", /^\/downloads\/agentpass-[\d.]+-py3-none-any\.whl$/);
  });

  it("answers 404 JSON for a file it does not serve", async () => {
    for (const path of ["/downloads/agentpass.tgz", "/downloads/..%2Fpackage.json"]) {
      const response = await fetch(`${publicUrl}${path}`);
      assert.equal(response.status, 404, path);
      assert.deepEqual(await response.json(), { error: "Not found", code: "not_found" });
    }
  });

  it("shows install commands on the landing page, /keys and a partner's page whose URLs answer 200", async () => {
    const browser = webClient({ request: (url, init) => fetch(url, init) }, publicUrl);
    const landing = await browser.text("/");
    const email = `installs-${crypto.randomUUID()}@example.com`;
    const since = mailbox.mails.length;
    await browser.post("/sign-in", { email, next: "/keys" });
    const { code } = signInSecrets(await mailbox.next(email, since));
    assert.equal((await browser.post("/sign-in/code", { code, next: "/keys" })).status, 303);
    const keys = await browser.text("/keys");
    const owner = await findAccountByEmail(identity.ctx, email);
    assert.ok(owner.ok);
    const partner = await createPartner(identity.ctx, {
      ownerAccountId: owner.account.id,
      name: "Maps",
    });
    assert.ok(partner.ok);
    assert.ok((await issueKey(identity.ctx, "partner", partner.partner.id, "server")).ok);
    const partnerPage = await browser.text(`/partners/${partner.partner.id}`);

    const shown = {
      landing: installUrls(landing),
      keys: installUrls(keys),
      partner: installUrls(partnerPage),
    };
    const cli = `${publicUrl}/downloads/agentpass-cli.tgz`;
    const verify = `${publicUrl}/downloads/agentpass-verify.tgz`;
    const python = `${publicUrl}${downloads.python?.path}`;
    assert.deepEqual(shown, {
      landing: [cli, verify, python],
      keys: [cli],
      partner: [verify, python],
    });
    for (const page of [landing, keys, partnerPage]) {
      assert.doesNotMatch(page, /npm install (-g )?@agentpass\//, "never a registry name");
      assert.match(page, /served by this AgentPass until/);
    }
    for (const url of new Set(Object.values(shown).flat())) {
      assert.equal((await fetch(url)).status, 200, url);
    }
  });
});

describe("an identity service without packed packages", () => {
  it("answers 404 JSON at the downloads' URLs, and the pages say how to install from a clone", async () => {
    const empty = mkdtempSync(join(tmpdir(), "agentpass-no-downloads-"));
    try {
      const downloads = readDownloads(empty);
      assert.deepEqual(downloads, {});
      assert.deepEqual(readDownloads(join(empty, "missing")), {}, "no folder at all");
      const client = createLoopbackClient(
        createApiListener(downloadRoutes(downloads), {
          logger: pino({ level: "silent" }),
          maxBodyBytes: 1024,
          trustProxy: "none",
        }),
      );
      try {
        for (const path of ["/downloads/agentpass-cli.tgz", "/downloads/agentpass-verify.tgz"]) {
          const response = await client.request(`http://localhost${path}`);
          assert.equal(response.status, 404);
          assert.deepEqual(await response.json(), { error: "Not found", code: "not_found" });
        }
      } finally {
        await client.close();
      }
      const install = installCommands("http://localhost:4000", downloads);
      assert.match(
        String(install.cli),
        /^<code>npm install -g packages-dist\/agentpass-cli-\*\.tgz<\/code> in a clone of the AgentPass repository, after <code>npm install<\/code> there/,
      );
      assert.match(String(install.verify), /packages-dist\/agentpass-verify-\*\.tgz/);
      assert.match(
        String(install.python),
        /<code>pip install \/path\/to\/agentpass\/packages-dist\/agentpass-\*\.whl<\/code>/,
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
