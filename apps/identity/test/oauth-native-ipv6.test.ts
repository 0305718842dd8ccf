import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import * as client from "openid-client";
import { type Browser, chromium } from "playwright-core";
import { startWebSession } from "../src/domain/web-sessions.ts";
import { startTestIssuer, type TestIssuer } from "./support/issuer.ts";

/**
 * A native app whose loopback redirect is an IPv6 literal (`http://[::1]:<port>`, RFC 8252
 * section 7.3) gets its code in a real Chromium: CSP's host-source grammar cannot name `[::1]`
 * in `form-action`, and Chromium holds a form's redirect to it.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** The app's own loopback server on `[::1]`, which receives the redirect as a native app does. */
async function startLoopbackApp() {
  const received = Promise.withResolvers<URL>();
  const server = createServer((request, response) => {
    received.resolve(new URL(request.url ?? "/", `http://[::1]:${port}`));
    response.setHeader("content-type", "text/html; charset=utf-8");
    response.end("<p>Signed in: you can close this window.</p>");
  });
  await new Promise<void>((resolve) => server.listen(0, "::1", resolve));
  const { port } = server.address() as { port: number };
  return {
    redirectUri: `http://[::1]:${port}/callback`,
    received: received.promise,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** `promise`, or a failure naming `what` after `ms`: a blocked navigation never settles. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms).unref(),
    ),
  ]);
}

const insecure = { execute: [client.allowInsecureRequests], algorithm: "oauth2" as const };

for (const engine of testEngines()) {
  describe(`a native app on http://[::1] (${engine})`, () => {
    let as: TestIssuer;
    let browser: Browser;
    before(async () => {
      as = await startTestIssuer(engine);
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ["--no-sandbox"],
      });
    });
    after(async () => {
      await browser?.close();
      await as.close();
    });

    /** The consent page for a new client of `app`, open in Chromium as a signed-in person. */
    async function consentFor(app: Awaited<ReturnType<typeof startLoopbackApp>>) {
      const config = await client.dynamicClientRegistration(
        new URL(as.issuer),
        {
          redirect_uris: [app.redirectUri],
          client_name: "Native app",
          token_endpoint_auth_method: "none",
        },
        client.None(),
        insecure,
      );
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: app.redirectUri,
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        state,
      });
      const account = await as.identity.account();
      const context = await browser.newContext();
      await context.addCookies([
        {
          name: "agentpass_session",
          value: await startWebSession(as.identity.ctx, account.id),
          url: as.issuer,
        },
      ]);
      const page = await context.newPage();
      const blocked: string[] = [];
      page.on("console", (message) => {
        if (/Content Security Policy/.test(message.text())) blocked.push(message.text());
      });
      const shown = await page.goto(url.href);
      assert.match((await page.textContent("body")) ?? "", /Native app/);
      // No source CSP cannot parse: the form posts to this site only.
      assert.match(shown?.headers()["content-security-policy"] ?? "", /form-action 'self';/);
      return { config, verifier, state, account, page, context, blocked };
    }

    it("gets its code and state when the person allows, and redeems it", async () => {
      const app = await startLoopbackApp();
      try {
        const consent = await consentFor(app);
        await consent.page.getByRole("button", { name: "Allow" }).click();
        const returned = await within(app.received, 5000, `the redirect (${consent.blocked})`);
        assert.equal(returned.searchParams.get("iss"), as.issuer);
        assert.deepEqual(consent.blocked, []);
        const tokens = await client.authorizationCodeGrant(consent.config, returned, {
          pkceCodeVerifier: consent.verifier,
          expectedState: consent.state,
        });
        assert.match(tokens.access_token, /^aps_/);
        await consent.context.close();
      } finally {
        await app.close();
      }
    });

    it("gets access_denied when the person denies", async () => {
      const app = await startLoopbackApp();
      try {
        const consent = await consentFor(app);
        await consent.page.getByRole("button", { name: "Deny" }).click();
        const returned = await within(app.received, 5000, `the redirect (${consent.blocked})`);
        assert.equal(returned.searchParams.get("error"), "access_denied");
        assert.equal(returned.searchParams.get("state"), consent.state);
        await consent.context.close();
      } finally {
        await app.close();
      }
    });
  });
}
