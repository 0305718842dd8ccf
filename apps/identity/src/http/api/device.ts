import { defineEndpoint, type Endpoint } from "@agentpass/http";
import { z } from "zod";
import { POLL_ERROR_DESCRIPTIONS } from "../../domain/device-login.ts";
import { CLI_CLIENT_ID } from "../../domain/oauth.ts";
import { ERRORS } from "../errors.ts";
import type { DeviceFlow } from "./oauth/device-flow.ts";
import {
  COMMON_REFUSALS,
  MAX_FORM_BYTES,
  NO_STORE,
  OAuthErrorSchema,
  oauthError,
  refusal,
  renderOAuthError,
} from "./oauth/wire.ts";

const DeviceCodeRequest = z.object({
  client_name: z
    .string()
    .max(100)
    .optional()
    .meta({ description: "Shown to the person who approves, e.g. the host name" }),
});
const DeviceCodeResponse = z.object({
  device_code: z.string(),
  user_code: z.string().meta({ description: "Eight letters, shown as XXXX-XXXX" }),
  verification_uri: z.string(),
  verification_uri_complete: z.string(),
  expires_in: z.number(),
  interval: z.number(),
});
const DeviceTokenRequest = z.object({
  grant_type: z.literal("urn:ietf:params:oauth:grant-type:device_code").optional(),
  device_code: z.string(),
});
const DeviceTokenResponse = z.object({
  user_key: z.string().meta({ description: "A new user key (apu_…), named after the device" }),
  key_id: z.string(),
});

/**
 * `/api/device/code` and `/api/device/token`: the first URLs of `agentpass login` in the browser,
 * kept for clients built against them. They are aliases of the OAuth device flow
 * (`/oauth/device_authorization` and `/oauth/token`) for the CLI's client `agentpass-cli`: the
 * same implementation, form reader, headers and refusals; only their success bodies keep their
 * first shape. Either JSON or a form is read.
 */
export function deviceEndpoints(flow: DeviceFlow): Endpoint[] {
  const invalidBody = oauthError("invalid_request", "Send device_code (and grant_type)");
  return [
    defineEndpoint({
      method: "POST",
      path: "/api/device/code",
      maxBodyBytes: MAX_FORM_BYTES,
      renderError: renderOAuthError,
      operation: {
        operationId: "startDeviceLogin",
        description:
          "No credentials: answers a device code for the CLI to poll and a user code its person confirms at `/device`, signed in. The same flow as `POST /oauth/device_authorization` with the client `agentpass-cli`.",
        tags: ["Agents"],
        summary: "Start a browser login for the CLI (an alias of /oauth/device_authorization)",
        security: [],
        responses: {
          "200": {
            description: "Show user_code and verification_uri to the person; poll with device_code",
            content: { "application/json": { schema: DeviceCodeResponse } },
          },
          "429": refusal("temporarily_unavailable: too many logins started from this address"),
          ...COMMON_REFUSALS,
        },
      },
      errors: [ERRORS.invalid_request_body],
      input: { body: DeviceCodeRequest, encoding: "json or form", bodyRequired: false },
      refuseInput: () => {
        const { message, code, status } = ERRORS.invalid_request_body;
        return { status, body: { error: message, code }, headers: NO_STORE };
      },
      async handle(request, { body }) {
        const started = await flow.start(request, {
          client_id: CLI_CLIENT_ID,
          client_name: body.client_name ?? "",
        });
        if (!started.ok) return started.answer;
        const { user_code: userCode, verification_uri: page } = started.started;
        return {
          status: 200,
          body: { ...started.started, verification_uri_complete: `${page}?code=${userCode}` },
          headers: NO_STORE,
        };
      },
    }),
    defineEndpoint({
      method: "POST",
      path: "/api/device/token",
      maxBodyBytes: MAX_FORM_BYTES,
      renderError: renderOAuthError,
      operation: {
        operationId: "pollDeviceLogin",
        tags: ["Agents"],
        summary:
          "Poll a browser login; once approved, answers a new user key once (an alias of /oauth/token)",
        description:
          "RFC 8628 section 3.4. Until the person decides, 400 with error authorization_pending (or slow_down when polling faster than the interval).",
        security: [],
        responses: {
          "200": {
            description: "Approved: the new user key",
            content: { "application/json": { schema: DeviceTokenResponse } },
          },
          "400": {
            ...refusal(
              "invalid_request, authorization_pending, slow_down, access_denied, expired_token or invalid_grant (RFC 8628 section 3.5)",
            ),
            content: {
              "application/json": {
                schema: OAuthErrorSchema,
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
          ...COMMON_REFUSALS,
        },
      },
      input: { body: DeviceTokenRequest, encoding: "json or form" },
      refuseInput: () => invalidBody,
      async handle(request, { body }) {
        const polled = await flow.poll(request, {
          clientId: CLI_CLIENT_ID,
          deviceCode: body.device_code,
          audience: async () => null,
          // The older alias reads no DPoP proof: its grants are bearer ones, as before.
          jkt: null,
        });
        if (!polled.ok) return polled.answer;
        const { userKey, keyId, onWritten } = polled.issued;
        return {
          status: 200,
          body: { user_key: userKey, key_id: keyId },
          headers: NO_STORE,
          onWritten,
        };
      },
    }),
  ];
}
