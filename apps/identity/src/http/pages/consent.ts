import {
  type Answer,
  type DocumentedRoute,
  definePage,
  type EndpointRequest,
  type Page,
} from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../context.ts";
import {
  type AuthorizationCheck,
  type AuthorizationRequest,
  checkAuthorizationRequest,
  issueAuthorizationCode,
  type OAuthClient,
  type OAuthDeps,
} from "../../domain/oauth.ts";
import { byPerson } from "../web/audit.ts";
import type { SignedInRequest, WebGuard } from "../web/guard.ts";
import type { SafeHtml } from "../web/html.ts";
import { csrfField, html, renderPage } from "../web/page.ts";
import { contentSecurityPolicy, htmlAnswer, redirect } from "../web/page-answers.ts";

/**
 * The OAuth authorization endpoint (RFC 6749 section 4.1, PKCE required): a signed-in person
 * sees which client asks, for which partner, and approves or denies. The client's name is its
 * own word and shown as unverified; its redirect address is shown as the fact it is. Refusals
 * that cannot be trusted to the redirect URI (unknown client, unregistered redirect) are shown
 * here, and so are those of a client nobody vouched for, with its name and domain; a vouched-for
 * client's go back to it with `state` and `iss` (RFC 9207).
 */
export function consentPages(ctx: IdentityContext, guard: WebGuard, oauth: OAuthDeps): Page[] {
  function page(
    web: SignedInRequest,
    body: SafeHtml,
    status = 200,
    headers: Record<string, string> = {},
  ) {
    return htmlAnswer(
      renderPage({ title: "Allow access?", session: web.session, csrf: web.csrf, body }),
      status,
      headers,
    );
  }

  function back(redirectUri: string, params: Record<string, string | undefined>) {
    const target = new URL(redirectUri);
    for (const [name, value] of Object.entries(params)) {
      if (value !== undefined) target.searchParams.set(name, value);
    }
    target.searchParams.set("iss", oauth.issuer);
    return redirect(target.href);
  }

  /**
   * The consent form's answer: as it is, unless it redirects where the consent page's
   * `form-action` could not allow (a browser blocks that redirect). Then it is a page of this
   * site that goes on by `Refresh`, a navigation of its own that no `form-action` governs, with
   * a link to follow by hand where refreshes are turned off.
   */
  function leaveForm(web: SignedInRequest, answer: Answer): Answer {
    const location = answer.status === 303 ? answer.headers?.Location : undefined;
    if (typeof location !== "string" || destinationOf(location).source !== null) return answer;
    const body = html`<p>Taking you back to the app. <a href="${location}">Continue</a> if nothing happens.</p>`;
    return page(web, body, 200, { Refresh: `0; url=${location}` });
  }

  /** The request checked (metadata documents fetched for it counted at the client's address). */
  async function checked(
    request: EndpointRequest,
    web: SignedInRequest,
    query: string,
  ): Promise<{ ok: true; request: AuthorizationRequest } | { ok: false; answer: Answer }> {
    const check: AuthorizationCheck = await checkAuthorizationRequest(
      ctx,
      oauth,
      new URLSearchParams(query),
      request.clientIp(),
      web.session.accountId,
    );
    if (check.ok) return { ok: true, request: check.request };
    if (!check.redirect) {
      const from = check.client ? html` from ${clientOf(check.client)}` : "";
      const refusal = page(
        web,
        html`<p class="error" role="alert">This authorization request${from} cannot be answered: ${check.description}.</p>
${check.client ? html`<p class="muted">You were not sent back to it: nobody has vouched for this client yet.</p>` : ""}`,
        400,
      );
      return { ok: false, answer: refusal };
    }
    const answer = back(check.redirectUri, {
      error: check.error,
      error_description: check.description,
      state: check.state,
    });
    return { ok: false, answer };
  }

  /** The client as a person may judge it: its own word for its name, and where it lives. */
  function clientOf(client: OAuthClient) {
    const domain =
      client.kind === "metadata_document"
        ? new URL(client.clientId).host
        : client.redirectUris.map((uri) => destinationOf(uri).shown).join(", ");
    return html`<strong>${client.clientName}</strong> <span class="muted">(unverified name, at <code>${domain}</code>)</span>`;
  }

  function consent(web: SignedInRequest, request: AuthorizationRequest, query: string) {
    const { client, resource } = request;
    const redirectHost = destinationOf(request.redirectUri).shown;
    return html`<div class="card">
<p><strong>${client.clientName}</strong> <span class="muted">(unverified name${
      client.kind === "metadata_document"
        ? html`, published at <code>${client.clientId}</code>`
        : ""
    })</span> asks to act as you, <strong>${web.session.email}</strong>${
      resource
        ? html` with <strong>${resource.partnerName}</strong> (<code>${resource.url}</code>)`
        : html` with any AgentPass partner`
    }.</p>
<p>If you allow it, ${resource ? resource.partnerName : "each partner it calls"} learns your email address. You can revoke this access at any time on <a href="/keys">your keys</a>.</p>
<p class="muted">You will be sent back to <code>${redirectHost}</code>.</p>
<form method="post" action="/oauth/authorize">${csrfField(web.csrf)}
<input type="hidden" name="request" value="${query}">
<p><button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button></p>
</form></div>`;
  }

  const ask = definePage({
    method: "GET",
    path: "/oauth/authorize",
    handle: guard.signedIn(async (request, web) => {
      const query = request.search;
      const check = await checked(request, web, query);
      if (!check.ok) return check.answer;
      // The consent form's answer redirects to the client: the page's form-action allows
      // that one origin (or a native app's private-use scheme) besides this one (browsers hold
      // a form's redirects to form-action). One it cannot name is reached another way
      // (`leaveForm`), and the policy stays this site's alone.
      const source = destinationOf(check.request.redirectUri).source;
      return page(web, consent(web, check.request, query), 200, {
        "Content-Security-Policy": contentSecurityPolicy(source ? `'self' ${source}` : "'self'"),
      });
    }),
  });
  const decide = definePage({
    method: "POST",
    path: "/oauth/authorize",
    handle: guard.signedIn(async (request, web) => {
      const query = (web.form.get("request") ?? "").slice(0, 8192);
      const check = await checked(request, web, query);
      if (!check.ok) return leaveForm(web, check.answer);
      const asked = check.request;
      const approved = web.form.get("decision") === "approve";
      const code = approved
        ? await issueAuthorizationCode(ctx, asked, web.session.accountId)
        : undefined;
      await ctx.audit.record({
        ...byPerson(request, web.session.accountId),
        action: approved ? "consent.approve" : "consent.deny",
        outcome: "success",
        subject: { kind: "oauth_client", id: asked.client.clientId },
        detail: {
          clientName: asked.client.clientName,
          partnerId: asked.resource?.partnerId ?? null,
          redirectUri: asked.redirectUri,
        },
      });
      if (!code) {
        const denied = back(asked.redirectUri, {
          error: "access_denied",
          error_description: "The person denied the request",
          state: asked.state,
        });
        return leaveForm(web, denied);
      }
      return leaveForm(web, back(asked.redirectUri, { code, state: asked.state }));
    }),
  });
  return [ask, decide];
}

/**
 * The OAuth authorization endpoint (RFC 6749 section 3.1) is this page, which the document
 * leaves out as it does every page; OAuth clients send people to it, so the API's document names
 * it and its answers (`GET` only: the form's `POST` is the page's own).
 */
export const AUTHORIZE_PAGE: DocumentedRoute = {
  method: "GET",
  path: "/oauth/authorize",
  operation: {
    operationId: "authorize",
    tags: ["OAuth"],
    summary: "OAuth authorization endpoint: the consent page a person's browser is sent to",
    description:
      "Authorization code with PKCE (S256) only. A browser without a signed-in session is sent to sign in first, then back here.",
    security: [],
    requestParams: {
      query: z.object({
        response_type: z.literal("code").optional(),
        client_id: z
          .string()
          .optional()
          .meta({ description: "A registered client id or a client metadata document URL" }),
        redirect_uri: z.string().optional(),
        code_challenge: z.string().optional(),
        code_challenge_method: z.literal("S256").optional(),
        state: z.string().optional(),
        resource: z
          .string()
          .optional()
          .meta({ description: "The partner's resource the token is for (RFC 8707)" }),
        scope: z.string().optional(),
      }),
    },
    responses: {
      "200": {
        description: "The consent page",
        content: { "text/html": { schema: { type: "string" } } },
      },
      "303": {
        description:
          "To sign in first (/sign-in?next=…), or back to the redirect_uri of a client the person already granted access with an error, state and iss (RFC 9207)",
        headers: {
          Location: { description: "Where the browser goes next", schema: { type: "string" } },
        },
      },
      "400": {
        description:
          "A request that cannot be answered at its redirect_uri (unknown client, unregistered redirect_uri), or any refused request of a client the person has not granted access, shown to the person with the client's name and domain",
        content: { "text/html": { schema: { type: "string" } } },
      },
    },
  },
};

/**
 * Where the consent's answer goes: an origin (a web client, a native app's loopback server), or a
 * native app's private-use scheme (RFC 8252 section 7.1), whose URL has no origin. As a CSP source
 * for `form-action` (null for an IPv6 literal such as a native app's `http://[::1]:<port>`: CSP's
 * host-source grammar has none, and a browser ignores such a source), and as shown to the person.
 */
function destinationOf(redirectUri: string): { source: string | null; shown: string } {
  const url = new URL(redirectUri);
  if (url.protocol === "https:" || url.protocol === "http:") {
    return { source: url.hostname.startsWith("[") ? null : url.origin, shown: url.host };
  }
  return { source: url.protocol, shown: `the app that opens ${url.protocol} links` };
}
