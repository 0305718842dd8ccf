import { HttpError, readHeader, readJsonBody, readTextBody, renderError } from "@agentpass/http";
import { type Context, Hono } from "hono";
import { z } from "zod";
import type { IdentityContext } from "../context.ts";
import {
  decideDeviceLogin,
  findPendingDeviceLogin,
  normalizeUserCode,
  type PendingDeviceLogin,
  pollDeviceLogin,
  startDeviceLogin,
} from "../device-login.ts";
import { type RateLimiter, tooManyRequests } from "../rate-limit.ts";
import type { SignedInRequest, WebGuard } from "../web/guard.ts";
import { csrfField, html, renderPage } from "../web/page.ts";

export const DeviceCodeRequest = z.object({
  client_name: z
    .string()
    .max(100)
    .optional()
    .describe("Shown to the person who approves, e.g. the host name"),
});
export const DeviceCodeResponse = z.object({
  device_code: z.string(),
  user_code: z.string().describe("Eight letters, shown as XXXX-XXXX"),
  verification_uri: z.string(),
  verification_uri_complete: z.string(),
  expires_in: z.number(),
  interval: z.number(),
});
export const DeviceTokenRequest = z.object({
  grant_type: z.literal("urn:ietf:params:oauth:grant-type:device_code").optional(),
  device_code: z.string(),
});
export const DeviceTokenResponse = z.object({
  user_key: z.string().describe("A new user key (apu_…), named after the device"),
  key_id: z.string(),
});

const MAX_BODY = 4096;

const DESCRIPTIONS: Record<string, string> = {
  authorization_pending: "The person has not approved yet",
  slow_down: "Polling too fast: wait 5 more seconds between polls",
  access_denied: "The person denied the request",
  expired_token: "The code expired; start again",
  invalid_grant: "Unknown or already used device code",
};

/** Reads a JSON or form-encoded body (RFC 8628 clients send forms) as string fields. */
async function readFields(c: Context): Promise<Record<string, unknown> | undefined> {
  if ((readHeader(c, "content-type") ?? "").startsWith("application/x-www-form-urlencoded")) {
    const text = await readTextBody(c, MAX_BODY);
    return text === undefined ? undefined : Object.fromEntries(new URLSearchParams(text));
  }
  const body = await readJsonBody(c, MAX_BODY);
  if (!body.ok) return body.empty ? {} : undefined;
  const value = body.value;
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * `agentpass login` in the browser (RFC 8628): the CLI asks for a code, the person approves it
 * at /device while signed in, the CLI's poll receives a new user key once.
 */
export function deviceRoutes(
  ctx: IdentityContext,
  guard: WebGuard,
  options: {
    publicUrl: string;
    perIp: RateLimiter;
    /** User codes one signed-in account may look up or decide: guessing codes is bounded. */
    perAccount: RateLimiter;
    clientIp: (c: Context) => string;
  },
) {
  function devicePage(
    c: Context,
    web: SignedInRequest,
    body: ReturnType<typeof html>,
    status: 200 | 400 | 404 | 429 = 200,
  ) {
    return c.html(
      renderPage({ title: "Log in a device", session: web.session, csrf: web.csrf, body }),
      status,
    );
  }

  function codeForm(csrf: string, error = "", fromLink = false) {
    return html`${
      fromLink
        ? html`<p class="warning" role="note">A link never approves a login. If someone sent you this link, close this page: they are asking for a key to your account.</p>`
        : ""
    }<form method="post" action="/device" class="card">${csrfField(csrf)}
<label for="user-code">Type the code shown in your own terminal by <code>agentpass login</code></label>
<input id="user-code" name="code" type="text" autocomplete="off" autocapitalize="characters" maxlength="20" required placeholder="XXXX-XXXX" ${error ? html`aria-describedby="code-error" aria-invalid="true"` : ""}>
${error ? html`<p id="code-error" class="error" role="alert">${error}</p>` : ""}
<p><button type="submit">Continue</button></p></form>`;
  }

  return new Hono()
    .post("/api/device/code", async (c) => {
      const limited = await options.perIp.take(options.clientIp(c));
      if (!limited.ok) {
        return renderError(c, tooManyRequests(limited));
      }
      const fields = await readFields(c);
      const parsed = DeviceCodeRequest.safeParse(fields ?? null);
      if (!parsed.success) return renderError(c, new HttpError(400, "Invalid request body"));
      const started = await startDeviceLogin(
        ctx,
        parsed.data.client_name ?? "",
        options.clientIp(c),
      );
      return c.json(
        {
          device_code: started.deviceCode,
          user_code: started.userCode,
          verification_uri: `${options.publicUrl}/device`,
          verification_uri_complete: `${options.publicUrl}/device?code=${started.userCode}`,
          expires_in: started.expiresIn,
          interval: started.interval,
        },
        200,
        { "Cache-Control": "no-store" },
      );
    })
    .post("/api/device/token", async (c) => {
      const fields = await readFields(c);
      const parsed = DeviceTokenRequest.safeParse(fields ?? null);
      if (!parsed.success) {
        return c.json(
          { error: "invalid_request", error_description: "Send device_code (and grant_type)" },
          400,
        );
      }
      const result = await pollDeviceLogin(ctx, parsed.data.device_code.slice(0, 100));
      if (!result.ok) {
        return c.json({ error: result.error, error_description: DESCRIPTIONS[result.error] }, 400, {
          "Cache-Control": "no-store",
        });
      }
      return c.json({ user_key: result.userKey, key_id: result.keyId }, 200, {
        "Cache-Control": "no-store",
      });
    })
    .get(
      "/device",
      // The page never takes a code from its URL: a person types the code their own terminal
      // shows, so a link someone sent cannot bring them to an approval (RFC 8628 section 5.4).
      guard.signedIn((c, web) =>
        devicePage(c, web, codeForm(web.csrf, "", c.req.query("code") !== undefined)),
      ),
    )
    .post(
      "/device",
      guard.signedIn(async (c, web) => {
        const limited = await options.perAccount.take(web.session.accountId);
        if (!limited.ok) {
          c.header("Retry-After", String(limited.resetSeconds));
          return devicePage(
            c,
            web,
            codeForm(web.csrf, "Too many codes tried. Wait a few minutes, then try again."),
            429,
          );
        }
        const typed = (web.form.get("code") ?? "").slice(0, 20);
        const decision = web.form.get("decision");
        if (decision === "approve" || decision === "deny") {
          return decide(c, web, typed, decision === "approve");
        }
        const pending = typed ? await findPendingDeviceLogin(ctx, typed) : null;
        if (!pending) {
          return devicePage(
            c,
            web,
            codeForm(
              web.csrf,
              "No pending login has this code. It may have expired (codes last 10 minutes).",
            ),
            404,
          );
        }
        return devicePage(c, web, confirmation(web, pending, options.clientIp(c)));
      }),
    );

  async function decide(c: Context, web: SignedInRequest, typed: string, approve: boolean) {
    const code = normalizeUserCode(typed);
    const decided =
      code !== "" && (await decideDeviceLogin(ctx, code, web.session.accountId, approve));
    if (!decided) {
      return devicePage(
        c,
        web,
        codeForm(web.csrf, "This login request has expired or was already decided."),
        400,
      );
    }
    return devicePage(
      c,
      web,
      html`<p class="${approve ? "ok" : "error"}" role="status">${
        approve
          ? "Approved. Your terminal receives its key in a few seconds; you can close this page."
          : "Denied. The terminal gets no key."
      }</p>`,
    );
  }

  /** What the person checks before approving: who asks, from where, since when. */
  function confirmation(web: SignedInRequest, pending: PendingDeviceLogin, here: string) {
    const minutes = Math.max(0, Math.round((ctx.clock() - pending.startedAt) / 60_000));
    const from = pending.startedFrom ?? "an unrecorded address";
    const elsewhere =
      pending.startedFrom !== null && networkOf(pending.startedFrom) !== networkOf(here);
    return html`<div class="card">
<p class="warning" role="alert">Approve only a login you started yourself, just now, on a machine you control. Approving gives that machine a user key that acts as <strong>${web.session.email}</strong> with every AgentPass partner.</p>
<dl>
<dt>Code</dt><dd><code id="device-code">${pending.userCode}</code> <span class="muted">(it must be the code your own terminal shows)</span></dd>
<dt>Device</dt><dd>${pending.clientName} <span class="muted">(the device's own name for itself, not verified)</span></dd>
<dt>Started</dt><dd>${minutes === 0 ? "less than a minute ago" : `${minutes} minute${minutes === 1 ? "" : "s"} ago`} (${new Date(pending.startedAt).toISOString().slice(0, 16).replace("T", " ")} UTC)</dd>
<dt>From</dt><dd>${from}${pending.startedFrom ? html` <span class="muted">(network ${networkOf(pending.startedFrom)})</span>` : ""}</dd>
</dl>
${elsewhere ? html`<p class="warning" role="alert">This login was started from another network than the one you are using now. If you did not start it on another machine of yours, deny it.</p>` : ""}
<form method="post" action="/device" class="inline">${csrfField(web.csrf)}<input type="hidden" name="code" value="${pending.userCode}">
<button type="submit" name="decision" value="deny">Deny</button>
<button type="submit" name="decision" value="approve" class="secondary">Approve</button></form></div>`;
  }
}

/** The network an address belongs to, as shown to a person: IPv4 /24, IPv6 /48. */
export function networkOf(address: string): string {
  const v4 = /^(\d+\.\d+\.\d+)\.\d+$/.exec(address);
  if (v4) return `${v4[1]}.0/24`;
  if (address.includes(":")) {
    const groups = address.split("/")[0]?.split("::")[0]?.split(":") ?? [];
    return `${[...groups, "0", "0", "0"].slice(0, 3).join(":")}::/48`;
  }
  return address;
}
