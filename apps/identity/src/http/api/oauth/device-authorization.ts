import { type Answer, defineEndpoint } from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../../context.ts";
import { startDeviceLogin } from "../../../domain/device-login.ts";
import {
  CLI_CLIENT_ID,
  CLIENT_LOOKUP_DESCRIPTIONS,
  type ClientLookup,
  lookUpClient,
  type OAuthDeps,
} from "../../../domain/oauth.ts";
import type { RateLimiter } from "../../../infra/rate-limit.ts";
import {
  COMMON_REFUSALS,
  formBody,
  MAX_FORM_BYTES,
  NO_STORE,
  oauthError,
  readForm,
  refusal,
  renderOAuthError,
  tooManyRequests,
} from "./wire.ts";

const DeviceAuthorizationRequest = z.object({
  client_id: z.string().max(2000),
  scope: z.string().max(1000).optional(),
  client_name: z.string().max(1000).optional().meta({
    description: "agentpass-cli only: the device's own name, shown as unverified",
  }),
});

const DeviceAuthorizationResponse = z
  .object({
    device_code: z.string(),
    user_code: z.string(),
    verification_uri: z.string(),
    expires_in: z.number(),
    interval: z.number(),
  })
  .meta({ id: "DeviceAuthorizationResponse" });

/**
 * A client id that could not be looked up: unknown (401 `invalid_client`), or its metadata
 * document not fetched now, past a budget (429) or the instance's cap on fetches at once (503).
 */
export function clientLookupRefusal(found: Exclude<ClientLookup, { ok: true }>): Answer {
  const description = CLIENT_LOOKUP_DESCRIPTIONS[found.code];
  if (found.code === "rate_limited") return tooManyRequests(found.limit, description);
  if (found.code === "busy") return oauthError("unavailable", description, { "Retry-After": "1" });
  return oauthError("invalid_client", description);
}

/** RFC 8628 section 3.1: a device login starts here; the person approves it at `/device`. */
export function deviceAuthorizationEndpoint(
  ctx: IdentityContext,
  deps: OAuthDeps & { publicUrl: string },
  limits: { deviceCodesPerIp: RateLimiter },
) {
  return defineEndpoint({
    method: "POST",
    path: "/oauth/device_authorization",
    public: true,
    maxBodyBytes: MAX_FORM_BYTES,
    renderError: renderOAuthError,
    operation: {
      operationId: "oauthDeviceAuthorization",
      security: [],
      summary: "Start a device login (RFC 8628)",
      tags: ["OAuth"],
      requestBody: formBody(DeviceAuthorizationRequest),
      responses: {
        "200": {
          description: "The codes (RFC 8628 section 3.2)",
          content: { "application/json": { schema: DeviceAuthorizationResponse } },
        },
        "400": refusal("invalid_request"),
        "401": refusal("invalid_client"),
        "429": refusal(
          "temporarily_unavailable: too many logins started, or client metadata documents fetched, from this address; Retry-After",
        ),
        ...COMMON_REFUSALS,
        "503": refusal(
          "temporarily_unavailable: too many client metadata documents at once, or the database is out of reach; Retry-After",
        ),
      },
    },
    async handle(request) {
      const read = await readForm(request, DeviceAuthorizationRequest);
      if (!read.ok) return read.answer;
      const { fields } = read;
      const found = await lookUpClient(ctx, deps, fields.client_id, request.clientIp());
      if (!found.ok) return clientLookupRefusal(found);
      const { client } = found;
      const counted = await limits.deviceCodesPerIp.take(request.clientIp());
      if (!counted.ok) return tooManyRequests(counted, "Too many logins started from this address");
      const name =
        client.clientId === CLI_CLIENT_ID
          ? (fields.client_name ?? client.clientName)
          : client.clientName;
      const started = await startDeviceLogin(ctx, name, request.clientAddress());
      return {
        status: 200,
        body: {
          device_code: started.deviceCode,
          user_code: started.userCode,
          verification_uri: `${deps.publicUrl}/device`,
          expires_in: started.expiresIn,
          interval: started.interval,
        },
        headers: NO_STORE,
      };
    },
  });
}
