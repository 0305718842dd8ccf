import { type Answer, type ApiCall, defineEndpoint } from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../../context.ts";
import { refreshGrant } from "../../../domain/grants.ts";
import {
  lookUpClient,
  type OAuthDeps,
  partnerOfResource,
  redeemAuthorizationCode,
  type TokenResult,
} from "../../../domain/oauth.ts";
import type { DpopVerifier } from "../../../infra/dpop-proofs.ts";
import type { RateLimiter } from "../../../infra/rate-limit.ts";
import { clientOf } from "../../web/audit.ts";
import type { DeviceFlow } from "./device-flow.ts";
import { recordGrantCreated, recordGrantEnded } from "./grant-audit.ts";
import {
  COMMON_REFUSALS,
  formInput,
  MAX_FORM_BYTES,
  NO_STORE,
  oauthError,
  refusal,
  renderOAuthError,
  tooManyRequests,
} from "./wire.ts";

export const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

const TokenRequest = z.object({
  grant_type: z
    .string()
    .max(200)
    .meta({
      description: `authorization_code, refresh_token or ${DEVICE_CODE_GRANT}`,
    }),
  client_id: z.string().max(2000).optional(),
  code: z.string().max(1000).optional(),
  code_verifier: z.string().max(1000).optional(),
  redirect_uri: z.string().max(2000).optional(),
  refresh_token: z.string().max(1000).optional(),
  device_code: z.string().max(1000).optional(),
  resource: z.string().max(2000).optional(),
});
type TokenFields = z.infer<typeof TokenRequest>;

const TokenResponse = z
  .object({
    access_token: z.string().meta({ description: "A session token (aps_…), 5 minutes" }),
    token_type: z.enum(["Bearer", "DPoP"]).meta({
      description:
        "DPoP when the request carried a DPoP proof (RFC 9449): the token is bound to its key",
    }),
    expires_in: z.number().int(),
    refresh_token: z.string().optional().meta({
      description:
        "A device login's user key (apu_…, kept as is), or a browser flow's refresh token (apr_…), replaced at each refresh",
    }),
  })
  .meta({ id: "TokenResponse" });

export interface TokenLimits {
  /** Refreshes per grant, and per user key presented as a refresh token (the mint limit). */
  perUserKey: RateLimiter;
  /** Refreshes of rotating grants per account, all its grants together. */
  refreshesPerAccount: RateLimiter;
  /** Unknown keys and codes per client address. */
  badKeysPerIp: RateLimiter;
}

/** What a token request proved (RFC 9449): the key of its DPoP proof, or none. */
type Proven = { jkt: string | null };

/**
 * RFC 6749 section 3.2: the device code, authorization code and refresh token grants, each with
 * or without a DPoP proof (RFC 9449). A proof binds the access token, and a new grant's refresh
 * token, to its key; a proof must carry this service's current nonce, which a first attempt
 * learns from `use_dpop_nonce` (every DPoP client retries once).
 */
export function tokenEndpoint(
  ctx: IdentityContext,
  deps: OAuthDeps & { publicUrl: string; dpop: DpopVerifier },
  limits: TokenLimits,
  flow: DeviceFlow,
) {
  const expiresIn = Math.floor(ctx.sessionTokenTtlMs / 1000);
  // Section 4.3: htu is the URL the client addressed, PUBLIC_URL's, never one read from headers.
  const tokenUrl = `${deps.publicUrl}/oauth/token`;

  function tokenAnswer(
    result: TokenResult,
    proven: Proven,
    onWritten?: Answer["onWritten"],
  ): Answer {
    if (!result.ok) return oauthError(result.error, result.description);
    return {
      status: 200,
      body: {
        access_token: result.accessToken,
        token_type: proven.jkt ? "DPoP" : "Bearer",
        expires_in: result.expiresIn,
        ...(result.refreshToken && { refresh_token: result.refreshToken }),
      },
      headers: proven.jkt ? { ...NO_STORE, "DPoP-Nonce": deps.dpop.nonce() } : NO_STORE,
      onWritten,
    };
  }

  /** The request's DPoP proof checked: its key, none, or the refusal to answer. */
  async function proofOf(request: ApiCall): Promise<Proven | { refusal: Answer }> {
    const proof = request.header("dpop");
    if (proof === undefined) return { jkt: null };
    // One proof, one header (section 4.3): joined repeats carry a comma no JWT has.
    if (proof.includes(",")) {
      return { refusal: oauthError("invalid_dpop_proof", "Send one DPoP header") };
    }
    const checked = await deps.dpop.verify(proof.trim(), {
      method: "POST",
      url: tokenUrl,
      requireNonce: true,
    });
    if (checked.ok) return { jkt: checked.jkt };
    return {
      refusal: oauthError(checked.code, checked.description, { "DPoP-Nonce": deps.dpop.nonce() }),
    };
  }

  /**
   * Section 5.2: a client that registered `dpop_bound_access_tokens: true` gets no token without
   * a proof. Only a request without one asks (the CLI's needs no read).
   */
  async function refusalOfUnproven(
    clientId: string,
    proven: Proven,
    request: ApiCall,
  ): Promise<Answer | null> {
    if (proven.jkt !== null) return null;
    const found = await lookUpClient(ctx, deps, clientId, request.clientIp());
    if (!found.ok || !found.client.dpopBound) return null;
    return oauthError(
      "invalid_dpop_proof",
      "This client's tokens are DPoP-bound: send a DPoP proof",
    );
  }

  /** The partner a `resource` names, null when none was asked, undefined when it names none. */
  async function audienceOf(fields: TokenFields): Promise<string | null | undefined> {
    if (fields.resource === undefined) return null;
    return partnerOfResource(ctx, fields.resource);
  }

  async function deviceGrant(
    fields: TokenFields,
    request: ApiCall,
    proven: Proven,
  ): Promise<Answer> {
    const { device_code: deviceCode, client_id: clientId } = fields;
    if (!deviceCode || !clientId) {
      return oauthError("invalid_request", "Send device_code and client_id");
    }
    const unproven = await refusalOfUnproven(clientId, proven, request);
    if (unproven) return unproven;
    const polled = await flow.poll(request, {
      clientId,
      deviceCode,
      audience: () => audienceOf(fields),
      jkt: proven.jkt,
    });
    if (!polled.ok) return polled.answer;
    const { accessToken, userKey, onWritten } = polled.issued;
    // Spent only when the answer reached the device: else the grant is taken back.
    const issued = { ok: true as const, accessToken, expiresIn, refreshToken: userKey };
    return tokenAnswer(issued, proven, onWritten);
  }

  async function refreshTokenGrant(
    fields: TokenFields,
    request: ApiCall,
    proven: Proven,
  ): Promise<Answer> {
    const refreshToken = fields.refresh_token;
    if (!refreshToken) return oauthError("invalid_request", "Send refresh_token");
    const audience = await audienceOf(fields);
    if (audience === undefined) {
      return oauthError("invalid_target", "Unknown or unauthorized resource");
    }
    const result = await refreshGrant(
      ctx,
      { refreshToken, clientId: fields.client_id, audience, jkt: proven.jkt },
      { perGrant: limits.perUserKey, perAccount: limits.refreshesPerAccount },
    );
    if (result.ok) return tokenAnswer(result, proven);
    if (result.error === "rate_limited") {
      return tooManyRequests(result.limit, "Too many refreshes for this grant or account");
    }
    if (result.revokedGrant) {
      await recordGrantEnded(ctx, clientOf(request), result.revokedGrant, "refresh_token_reused");
    }
    if (result.error === "invalid_grant") {
      const counted = await limits.badKeysPerIp.take(request.clientIp());
      if (!counted.ok) return tooManyRequests(counted, "Too many unknown tokens from this address");
    }
    const error = result.error === "invalid_target" ? "invalid_target" : "invalid_grant";
    return oauthError(error, result.description);
  }

  async function authorizationCodeGrant(
    fields: TokenFields,
    request: ApiCall,
    proven: Proven,
  ): Promise<Answer> {
    const { code, redirect_uri: redirectUri, client_id: clientId, code_verifier } = fields;
    if (!code || !redirectUri || !clientId || !code_verifier) {
      return oauthError("invalid_request", "Send code, redirect_uri, client_id and code_verifier");
    }
    const unproven = await refusalOfUnproven(clientId, proven, request);
    if (unproven) return unproven;
    const redeemed = await redeemAuthorizationCode(ctx, {
      code,
      redirectUri,
      clientId,
      verifier: code_verifier,
      resource: fields.resource,
      clientAddress: request.clientAddress(),
      jkt: proven.jkt,
    });
    if (redeemed.ok) await recordGrantCreated(ctx, clientOf(request), redeemed.grant);
    else if (redeemed.revokedGrant) {
      await recordGrantEnded(ctx, clientOf(request), redeemed.revokedGrant, "code_reused");
    }
    return tokenAnswer(redeemed, proven);
  }

  return defineEndpoint({
    method: "POST",
    path: "/oauth/token",
    outcome: "oauth_token",
    public: true,
    maxBodyBytes: MAX_FORM_BYTES,
    renderError: renderOAuthError,
    operation: {
      operationId: "oauthToken",
      description:
        "A form (`application/x-www-form-urlencoded`). Access tokens are 5-minute session tokens; a refresh token rotates on each use, and a reused one ends the grant. With a `DPoP` proof the tokens are bound to its key; `resource` (RFC 8707) binds them to one partner.",
      security: [],
      summary: "Token endpoint: device code, authorization code (PKCE), refresh token",
      tags: ["OAuth"],
      responses: {
        "200": {
          description: "Tokens (RFC 6749 section 5.1)",
          content: { "application/json": { schema: TokenResponse } },
        },
        "400": refusal(
          "RFC 6749 section 5.2, RFC 8628 section 3.5, or RFC 9449: invalid_dpop_proof, use_dpop_nonce (with DPoP-Nonce)",
        ),
        "401": refusal("invalid_client"),
        "429": refusal(
          "temporarily_unavailable: too many refreshes or unknown tokens; Retry-After",
        ),
        ...COMMON_REFUSALS,
      },
    },
    ...formInput(TokenRequest),
    async handle(request, { body: fields }) {
      const grants = {
        [DEVICE_CODE_GRANT]: deviceGrant,
        refresh_token: refreshTokenGrant,
        authorization_code: authorizationCodeGrant,
      };
      switch (fields.grant_type) {
        case DEVICE_CODE_GRANT:
        case "refresh_token":
        case "authorization_code": {
          const proven = await proofOf(request);
          if ("refusal" in proven) return proven.refusal;
          return grants[fields.grant_type](fields, request, proven);
        }
        default:
          return oauthError("unsupported_grant_type", "Unsupported grant_type");
      }
    },
  });
}
