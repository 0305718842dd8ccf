import type { Endpoint } from "@agentpass/http";
import type { IdentityContext } from "../../../context.ts";
import type { OAuthDeps } from "../../../domain/oauth.ts";
import type { DpopVerifier } from "../../../infra/dpop-proofs.ts";
import type { RateLimiter } from "../../../infra/rate-limit.ts";
import { deviceAuthorizationEndpoint } from "./device-authorization.ts";
import type { DeviceFlow } from "./device-flow.ts";
import { introspectionEndpoint } from "./introspect.ts";
import { metadataEndpoint } from "./metadata.ts";
import { registrationEndpoint } from "./register.ts";
import { revocationEndpoint } from "./revoke.ts";
import { type TokenLimits, tokenEndpoint } from "./token.ts";

/**
 * The OAuth 2.1 endpoints (RFC 8414 metadata, RFC 6749 token, RFC 8628 device authorization,
 * RFC 7662 introspection, RFC 7009 revocation, RFC 7591 registration), one file each, all in
 * OAuth's own wire format (`wire.ts`). The authorization endpoint is a page (`pages/consent.ts`).
 */
interface OAuthLimits extends TokenLimits {
  /** Revocation requests (RFC 7009) per client address, whatever they revoke. */
  revocationsPerIp: RateLimiter;
  /** Client registrations (RFC 7591) per client address. */
  registrationsPerIp: RateLimiter;
}

export function oauthEndpoints(
  ctx: IdentityContext,
  deps: OAuthDeps & { publicUrl: string; dpop: DpopVerifier },
  limits: OAuthLimits,
  flow: DeviceFlow,
): Endpoint[] {
  return [
    metadataEndpoint(deps.publicUrl),
    tokenEndpoint(ctx, deps, limits, flow),
    deviceAuthorizationEndpoint(flow),
    introspectionEndpoint(ctx, deps.publicUrl, limits),
    revocationEndpoint(ctx, limits),
    registrationEndpoint(ctx, limits),
  ];
}
