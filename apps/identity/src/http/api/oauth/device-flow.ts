import type { Answer, ApiCall } from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../../context.ts";
import {
  POLL_ERROR_DESCRIPTIONS,
  pollDeviceLogin,
  startDeviceLogin,
  undoDevicePoll,
} from "../../../domain/device-login.ts";
import {
  CLI_CLIENT_ID,
  CLIENT_LOOKUP_DESCRIPTIONS,
  type ClientLookup,
  lookUpClient,
  type OAuthDeps,
  resolveClient,
} from "../../../domain/oauth.ts";
import { sealFor } from "../../../domain/session-tokens.ts";
import type { RateLimiter } from "../../../infra/rate-limit.ts";
import { clientOf } from "../../web/audit.ts";
import { recordGrantCreated, recordGrantEnded } from "./grant-audit.ts";
import { oauthError, tooManyRequests } from "./wire.ts";

/**
 * The device authorization grant (RFC 8628), one implementation: `/oauth/device_authorization`
 * and the token endpoint's device grant serve it, and so do their older aliases
 * `/api/device/code` and `/api/device/token`, which only present its results their own way.
 */
export const DeviceAuthorizationRequest = z.object({
  client_id: z.string().max(2000),
  scope: z.string().max(1000).optional(),
  client_name: z.string().max(1000).optional().meta({
    description: "agentpass-cli only: the device's own name, shown as unverified",
  }),
});

/** What a login started answers, before an endpoint presents it. */
export interface DeviceStarted {
  device_code: string;
  user_code: string;
  verification_uri: string;
  /** RFC 8628 section 3.3.1: the page with the code filled in; the person still sends it. */
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** A device grant issued: the user key (the refresh token) and its first session token. */
export interface DeviceIssued {
  keyId: string;
  userKey: string;
  accessToken: string;
  /** Takes the grant back when the answer did not reach the device. */
  onWritten: NonNullable<Answer["onWritten"]>;
}

type Outcome<T> = ({ ok: true } & T) | { ok: false; answer: Answer };

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

export function deviceFlow(
  ctx: IdentityContext,
  deps: OAuthDeps & { publicUrl: string },
  limits: { deviceCodesPerIp: RateLimiter },
) {
  /** RFC 8628 section 3.1: a login starts; the person approves it at `/device`. */
  async function start(
    request: ApiCall,
    fields: { client_id: string; client_name?: string | undefined },
  ): Promise<Outcome<{ started: DeviceStarted }>> {
    const found = await lookUpClient(ctx, deps, fields.client_id, request.clientIp());
    if (!found.ok) return { ok: false, answer: clientLookupRefusal(found) };
    const { client } = found;
    const counted = await limits.deviceCodesPerIp.take(request.clientIp());
    if (!counted.ok) {
      return {
        ok: false,
        answer: tooManyRequests(counted, "Too many logins started from this address"),
      };
    }
    const name =
      client.clientId === CLI_CLIENT_ID
        ? (fields.client_name ?? client.clientName)
        : client.clientName;
    const started = await startDeviceLogin(ctx, name, request.clientAddress());
    return {
      ok: true,
      started: {
        device_code: started.deviceCode,
        user_code: started.userCode,
        verification_uri: `${deps.publicUrl}/device`,
        verification_uri_complete: `${deps.publicUrl}/device?code=${started.userCode}`,
        expires_in: started.expiresIn,
        interval: started.interval,
      },
    };
  }

  /**
   * RFC 8628 section 3.4: a poll. Once the person approved, the new user key and a session
   * token for `audience`, given once; the grant is recorded, and taken back if the answer never
   * reached the device.
   */
  async function poll(
    request: ApiCall,
    asked: {
      clientId: string;
      deviceCode: string;
      /** The partner the session token is for: null for none, undefined for an unknown one. */
      audience: () => Promise<string | null | undefined>;
      /** The thumbprint of the DPoP key the grant is bound to; null: a bearer grant. */
      jkt: string | null;
    },
  ): Promise<Outcome<{ issued: DeviceIssued }>> {
    if (!(await resolveClient(ctx, deps, asked.clientId, request.clientIp()))) {
      return { ok: false, answer: oauthError("invalid_client", "Unknown client") };
    }
    const audience = await asked.audience();
    if (audience === undefined) {
      return { ok: false, answer: oauthError("invalid_target", "Unknown resource") };
    }
    const code = asked.deviceCode.slice(0, 100);
    const polled = await pollDeviceLogin(ctx, code, asked.clientId, asked.jkt);
    if (!polled.ok) {
      return { ok: false, answer: oauthError(polled.error, POLL_ERROR_DESCRIPTIONS[polled.error]) };
    }
    const given = { keyId: polled.keyId, accountId: polled.accountId };
    const grant = {
      id: given.keyId,
      accountId: given.accountId,
      clientId: asked.clientId,
      clientName: polled.clientName,
    };
    const client = clientOf(request);
    await recordGrantCreated(ctx, client, grant);
    const owner = { id: polled.keyId, ownerId: polled.accountId };
    const sealed = sealFor(ctx, owner, audience, asked.jkt);
    return {
      ok: true,
      issued: {
        keyId: polled.keyId,
        userKey: polled.userKey,
        accessToken: sealed.sessionToken,
        onWritten: (written) => {
          if (written) return;
          void undoDevicePoll(ctx, code, given)
            .then(() => recordGrantEnded(ctx, client, grant, "undelivered"))
            .catch(() => {});
        },
      },
    };
  }

  return { start, poll };
}

export type DeviceFlow = ReturnType<typeof deviceFlow>;
