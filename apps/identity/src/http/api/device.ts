import { defineEndpoint, type Endpoint, type EndpointRequest, HttpError } from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../context.ts";
import {
  POLL_ERROR_DESCRIPTIONS,
  pollDeviceLogin,
  startDeviceLogin,
} from "../../domain/device-login.ts";
import { CLI_CLIENT_ID } from "../../domain/oauth.ts";
import { type RateLimiter, tooManyRequests } from "../../infra/rate-limit.ts";
import { ERRORS } from "../errors.ts";
import { clientOf } from "../web/audit.ts";
import { recordGrantCreated } from "./oauth/grant-audit.ts";

export const DeviceCodeRequest = z.object({
  client_name: z
    .string()
    .max(100)
    .optional()
    .meta({ description: "Shown to the person who approves, e.g. the host name" }),
});
export const DeviceCodeResponse = z.object({
  device_code: z.string(),
  user_code: z.string().meta({ description: "Eight letters, shown as XXXX-XXXX" }),
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
  user_key: z.string().meta({ description: "A new user key (apu_…), named after the device" }),
  key_id: z.string(),
});
const DeviceTokenError = z.object({
  error: z.enum([
    "invalid_request",
    "authorization_pending",
    "slow_down",
    "access_denied",
    "expired_token",
    "invalid_grant",
  ]),
  error_description: z.string(),
});

const MAX_BODY = 4096;
const NO_STORE = { "Cache-Control": "no-store" };

const FORM = "application/x-www-form-urlencoded";

/** A JSON or form-encoded body (RFC 8628 clients send forms) as fields; undefined if neither. */
async function readFields(request: EndpointRequest): Promise<Record<string, unknown> | undefined> {
  if ((request.header("content-type") ?? "").toLowerCase().startsWith(FORM)) {
    const text = await request.readText();
    return text === undefined ? undefined : Object.fromEntries(new URLSearchParams(text));
  }
  const body = await request.readJson();
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
export function deviceEndpoints(
  ctx: IdentityContext,
  options: { publicUrl: string; perIp: RateLimiter },
): Endpoint[] {
  const body = (schema: z.ZodType) => ({
    required: false,
    content: { "application/json": { schema }, [FORM]: { schema } },
  });
  return [
    defineEndpoint({
      method: "POST",
      path: "/api/device/code",
      maxBodyBytes: MAX_BODY,
      operation: {
        operationId: "startDeviceLogin",
        summary: "Start a browser login for a CLI (RFC 8628 device authorization request)",
        security: [],
        requestBody: body(DeviceCodeRequest),
        responses: {
          "200": {
            description: "Show user_code and verification_uri to the person; poll with device_code",
            content: { "application/json": { schema: DeviceCodeResponse } },
          },
        },
      },
      errors: [ERRORS.invalid_request_body, ERRORS.body_too_large, ERRORS.rate_limited],
      async handle(request) {
        const limited = await options.perIp.take(request.clientIp());
        if (!limited.ok) return tooManyRequests(limited);
        const parsed = DeviceCodeRequest.safeParse((await readFields(request)) ?? null);
        if (!parsed.success) return new HttpError(ERRORS.invalid_request_body);
        const started = await startDeviceLogin(
          ctx,
          parsed.data.client_name ?? "",
          request.clientAddress(),
        );
        return {
          status: 200,
          body: {
            device_code: started.deviceCode,
            user_code: started.userCode,
            verification_uri: `${options.publicUrl}/device`,
            verification_uri_complete: `${options.publicUrl}/device?code=${started.userCode}`,
            expires_in: started.expiresIn,
            interval: started.interval,
          },
          headers: NO_STORE,
        };
      },
    }),
    defineEndpoint({
      method: "POST",
      path: "/api/device/token",
      maxBodyBytes: MAX_BODY,
      operation: {
        operationId: "pollDeviceLogin",
        summary: "Poll a browser login; once approved, answers a new user key once",
        description:
          "RFC 8628 section 3.4. Until the person decides, 400 with error authorization_pending (or slow_down when polling faster than the interval).",
        security: [],
        requestBody: { ...body(DeviceTokenRequest), required: true },
        responses: {
          "200": {
            description: "Approved: the new user key",
            content: { "application/json": { schema: DeviceTokenResponse } },
          },
          "400": {
            description: "Pending, too fast, denied, expired or unknown (RFC 8628 section 3.5)",
            content: {
              "application/json": {
                schema: DeviceTokenError,
                examples: {
                  pending: {
                    value: {
                      error: "authorization_pending",
                      error_description: POLL_ERROR_DESCRIPTIONS.authorization_pending,
                    },
                  },
                },
              },
            },
          },
        },
      },
      errors: [ERRORS.body_too_large],
      async handle(request) {
        const parsed = DeviceTokenRequest.safeParse((await readFields(request)) ?? null);
        if (!parsed.success) {
          return {
            status: 400,
            body: {
              error: "invalid_request",
              error_description: "Send device_code (and grant_type)",
            },
            headers: NO_STORE,
          };
        }
        const result = await pollDeviceLogin(
          ctx,
          parsed.data.device_code.slice(0, 100),
          CLI_CLIENT_ID,
        );
        if (!result.ok) {
          return {
            status: 400,
            body: { error: result.error, error_description: POLL_ERROR_DESCRIPTIONS[result.error] },
            headers: NO_STORE,
          };
        }
        await recordGrantCreated(ctx, clientOf(request), {
          id: result.keyId,
          accountId: result.accountId,
          clientId: CLI_CLIENT_ID,
          clientName: result.clientName,
        });
        return {
          status: 200,
          body: { user_key: result.userKey, key_id: result.keyId },
          headers: NO_STORE,
        };
      },
    }),
  ];
}
