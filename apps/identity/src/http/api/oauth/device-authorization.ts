import { defineEndpoint } from "@agentpass/http";
import { z } from "zod";
import { DeviceAuthorizationRequest, type DeviceFlow } from "./device-flow.ts";
import {
  COMMON_REFUSALS,
  formInput,
  MAX_FORM_BYTES,
  NO_STORE,
  refusal,
  renderOAuthError,
} from "./wire.ts";

const DeviceAuthorizationResponse = z
  .object({
    device_code: z.string(),
    user_code: z.string(),
    verification_uri: z.string(),
    verification_uri_complete: z.string().meta({
      description:
        "The page with user_code filled in (for a QR code or a link): the person still sends it and approves",
    }),
    expires_in: z.number(),
    interval: z.number(),
  })
  .meta({ id: "DeviceAuthorizationResponse" });

/** RFC 8628 section 3.1: a device login starts here; the person approves it at `/device`. */
export function deviceAuthorizationEndpoint(flow: DeviceFlow) {
  return defineEndpoint({
    method: "POST",
    path: "/oauth/device_authorization",
    public: true,
    maxBodyBytes: MAX_FORM_BYTES,
    renderError: renderOAuthError,
    operation: {
      operationId: "oauthDeviceAuthorization",
      description:
        "A form with `client_id`: answers `device_code`, `user_code`, `verification_uri` and `verification_uri_complete` (which only fills the code in: the person confirms it at `/device`, signed in), `expires_in` and `interval`.",
      security: [],
      summary: "Start a device login (RFC 8628)",
      tags: ["OAuth"],
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
    ...formInput(DeviceAuthorizationRequest),
    async handle(request, { body }) {
      const started = await flow.start(request, body);
      if (!started.ok) return started.answer;
      return { status: 200, body: started.started, headers: NO_STORE };
    },
  });
}
