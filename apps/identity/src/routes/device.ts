import { HttpError, readHeader, readJsonBody, readTextBody, renderError } from "@agentpass/http";
import { type Context, Hono } from "hono";
import { z } from "zod";
import type { IdentityContext } from "../context.ts";
import {
  decideDeviceLogin,
  findPendingDeviceLogin,
  normalizeUserCode,
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
  options: { publicUrl: string; perIp: RateLimiter; clientIp: (c: Context) => string },
) {
  function devicePage(
    c: Context,
    web: SignedInRequest,
    body: ReturnType<typeof html>,
    status: 200 | 400 | 404 = 200,
  ) {
    return c.html(
      renderPage({ title: "Log in a device", session: web.session, csrf: web.csrf, body }),
      status,
    );
  }

  function codeForm(error = "") {
    return html`<form method="get" action="/device" class="card">
<label for="user-code">Code shown by <code>agentpass login</code></label>
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
      const name =
        (parsed.data.client_name ?? "").replace(/[\p{Cc}\p{Cs}]/gu, "").trim() || "CLI login";
      const started = await startDeviceLogin(ctx, name);
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
      guard.signedIn(async (c, web) => {
        const typed = c.req.query("code");
        if (!typed) return devicePage(c, web, codeForm());
        const pending = await findPendingDeviceLogin(ctx, typed.slice(0, 20));
        if (!pending) {
          return devicePage(
            c,
            web,
            codeForm(
              "No pending login has this code. It may have expired (codes last 10 minutes).",
            ),
            404,
          );
        }
        return devicePage(
          c,
          web,
          html`<div class="card"><p><strong>${pending.clientName}</strong> asks for a user key of <strong>${web.session.email}</strong>.</p>
<p>Check that your terminal shows the code <code id="device-code">${pending.userCode}</code>. Approve only a login you started yourself.</p>
<form method="post" action="/device" class="inline">${csrfField(web.csrf)}<input type="hidden" name="code" value="${pending.userCode}">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button></form></div>`,
        );
      }),
    )
    .post(
      "/device",
      guard.signedIn(async (c, web) => {
        const code = normalizeUserCode(web.form.get("code") ?? "");
        const approve = web.form.get("decision") === "approve";
        const decided =
          code !== "" && (await decideDeviceLogin(ctx, code, web.session.accountId, approve));
        if (!decided) {
          return devicePage(
            c,
            web,
            codeForm("This login request has expired or was already decided."),
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
      }),
    );
}
