import assert from "node:assert/strict";
import type { Engine } from "@agentpass/db/testing";
import { freePort } from "@agentpass/db/testing";
import { startServer } from "@agentpass/http";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { openTestNotes, type TestNotes } from "./harness.ts";

/** Where the MCP clients of the tests are sent back to; a browser route catches it. */
const CALLBACK = "http://127.0.0.1:9/mcp-callback";

/**
 * The SDK's OAuth client state in memory, as an agent keeps it on disk: every `saveTokens` is
 * kept, and `invalidateCredentials("tokens")` (the SDK's answer to `invalid_grant`) forgets the
 * tokens, as a standard client does.
 */
export class MemoryProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  readonly saves: OAuthTokens[] = [];
  readonly invalidations: string[] = [];
  verifier = "";
  authorizationUrl: URL | undefined;
  readonly clientName: string;

  constructor(clientName: string) {
    this.clientName = clientName;
  }

  get redirectUrl() {
    return CALLBACK;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.clientName,
      redirect_uris: [CALLBACK],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.client = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
    this.saves.push(tokens);
  }
  invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery") {
    this.invalidations.push(scope);
    if (scope === "all" || scope === "tokens") this.saved = undefined;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/**
 * The identity service and the notes API on real ports, each's PUBLIC_URL its own, with the
 * notes partner answering for its `/mcp` URL (RFC 8707): a stock MCP client needs that URL only.
 */
export async function openNotesForMcpClients(engine: Engine) {
  const [identityPort, notesPort] = [await freePort(), await freePort()];
  const notesUrl = `http://127.0.0.1:${notesPort}`;
  const notes = await openTestNotes(
    engine,
    { PUBLIC_URL: `http://127.0.0.1:${identityPort}` },
    { PUBLIC_URL: notesUrl },
  );
  const server = await startServer(
    { listener: notes.service.listener, close: async () => {} },
    { port: notesPort, host: "127.0.0.1" },
  );
  await notes.identity.addPartnerResource(notes.partner.id, `${notesUrl}/mcp`);
  return {
    notes,
    notesUrl,
    async close() {
      await server.close();
      await notes.close();
    },
  };
}

/**
 * The person `email`, signed in, approves on the consent page with plain HTTP (a browser's
 * cookies and form, no browser): answers the callback URL the client would receive.
 */
export async function approveConsent(
  notes: TestNotes,
  authorizationUrl: URL,
  email: string,
): Promise<URL> {
  const cookies = new Map([["agentpass_session", await notes.identity.webSession(email)]]);
  async function browse(url: string, init: RequestInit = {}) {
    const headers = new Headers(init.headers);
    headers.set("cookie", [...cookies].map(([name, value]) => `${name}=${value}`).join("; "));
    const response = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const cookie of response.headers.getSetCookie()) {
      const [name = "", value = ""] = (cookie.split(";")[0] ?? "").split("=");
      cookies.set(name, value);
    }
    return response;
  }
  const page = await browse(authorizationUrl.href);
  const html = await page.text();
  assert.equal(page.status, 200, html);
  const approved = await browse(`${notes.identity.url}/oauth/authorize`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      _csrf: /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "",
      request: /name="request" value="([^"]+)"/.exec(html)?.[1]?.replaceAll("&amp;", "&") ?? "",
      decision: "approve",
    }),
  });
  assert.equal(approved.status, 303, await approved.text());
  return new URL(approved.headers.get("location") ?? "");
}
