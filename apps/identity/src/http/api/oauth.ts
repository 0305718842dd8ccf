import { type Answer, defineEndpoint, type Endpoint, type EndpointRequest } from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../context.ts";
import {
  POLL_ERROR_DESCRIPTIONS,
  pollDeviceLogin,
  startDeviceLogin,
  undoDevicePoll,
} from "../../domain/device-login.ts";
import { refreshGrant, revokeByRefreshToken } from "../../domain/grants.ts";
import {
  CLI_CLIENT_ID,
  CLIENT_LOOKUP_DESCRIPTIONS,
  type ClientLookup,
  lookUpClient,
  MAX_CLIENT_NAME_LENGTH,
  type OAuthDeps,
  partnerOfResource,
  redeemAuthorizationCode,
  registerClient,
  resolveClient,
  type TokenResult,
} from "../../domain/oauth.ts";
import { introspectSessionToken, sealFor } from "../../domain/session-tokens.ts";
import {
  type RateLimiter,
  type RateLimitResult,
  rateLimitHeaders,
} from "../../infra/rate-limit.ts";

/**
 * The OAuth 2.1 endpoints (RFC 8414 metadata, RFC 6749 token, RFC 8628 device authorization,
 * RFC 7662 introspection, RFC 7009 revocation, RFC 7591 registration). They speak OAuth's own
 * wire format: form-encoded requests, `{ error, error_description }` refusals, and
 * `Cache-Control: no-store` on everything that carries a token.
 */
export const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
const FORM = "application/x-www-form-urlencoded";
const NO_STORE = { "Cache-Control": "no-store", Pragma: "no-cache" };
const MAX_FORM_BYTES = 8192;

export interface OAuthLimits {
  /** Refreshes per grant, and per user key presented as a refresh token (the mint limit). */
  perUserKey: RateLimiter;
  /** Refreshes of rotating grants per account, all its grants together. */
  refreshesPerAccount: RateLimiter;
  /** Unknown keys and codes per client address. */
  badKeysPerIp: RateLimiter;
  /** Device logins started per client address. */
  deviceCodesPerIp: RateLimiter;
  /** Revocation requests (RFC 7009) per client address, whatever they revoke. */
  revocationsPerIp: RateLimiter;
  /** Client registrations (RFC 7591) per client address. */
  registrationsPerIp: RateLimiter;
}

const OAuthError = z
  .object({ error: z.string(), error_description: z.string().optional() })
  .meta({ id: "OAuthError" });
const TokenResponse = z
  .object({
    access_token: z.string().meta({ description: "A session token (aps_…), 5 minutes" }),
    token_type: z.literal("Bearer"),
    expires_in: z.number().int(),
    refresh_token: z.string().optional().meta({
      description:
        "A device login's user key (apu_…, kept as is), or a browser flow's refresh token (apr_…), replaced at each refresh",
    }),
    scope: z.string().optional(),
  })
  .meta({ id: "TokenResponse" });
const formBody = (fields: Record<string, z.ZodType>) => ({
  required: true,
  content: { [FORM]: { schema: z.object(fields) } },
});
const refusal = (description: string) => ({
  description,
  content: { "application/json": { schema: OAuthError } },
});

/** The form fields of a request; an answer when the body is not a form, or repeats a field. */
async function readForm(request: EndpointRequest): Promise<Map<string, string> | Answer> {
  const type = (request.header("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== FORM) return oauthError(400, "invalid_request", `Send ${FORM}`);
  const text = (await request.readText()) ?? "";
  const fields = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(text)) {
    // RFC 6749 section 3.2: parameters must not be included more than once.
    if (fields.has(name)) return oauthError(400, "invalid_request", `${name} is repeated`);
    fields.set(name, value);
  }
  return fields;
}

function oauthError(
  status: number,
  error: string,
  description: string,
  headers: Record<string, string> = {},
): Answer {
  return {
    status,
    body: { error, error_description: description },
    headers: { ...NO_STORE, ...headers },
  };
}

/**
 * A 429 past a per-address budget on an endpoint whose RFC names no code for it (RFC 7009
 * revocation, RFC 7591 registration): `temporarily_unavailable` (RFC 6749's "try again later"),
 * with Retry-After and the RateLimit-* headers. `slow_down` belongs to the device flow's polling.
 */
function tooManyRequests(counted: RateLimitResult, description: string): Answer {
  return oauthError(429, "temporarily_unavailable", description, rateLimitHeaders(counted));
}

/**
 * A client id that could not be looked up: unknown (401 `invalid_client`), or its metadata
 * document not fetched now, past a budget (429) or the instance's cap on fetches at once (503).
 */
function clientLookupRefusal(found: Exclude<ClientLookup, { ok: true }>): Answer {
  const description = CLIENT_LOOKUP_DESCRIPTIONS[found.code];
  if (found.code === "rate_limited") return tooManyRequests(found.limit, description);
  if (found.code === "busy") {
    return oauthError(503, "temporarily_unavailable", description, { "Retry-After": "1" });
  }
  return oauthError(401, "invalid_client", description);
}

export function oauthEndpoints(
  ctx: IdentityContext,
  deps: OAuthDeps & { publicUrl: string },
  limits: OAuthLimits,
): Endpoint[] {
  const issuer = deps.publicUrl;
  const expiresIn = Math.floor(ctx.sessionTokenTtlMs / 1000);

  function tokenAnswer(result: TokenResult, onWritten?: Answer["onWritten"]): Answer {
    if (result.ok) {
      return {
        status: 200,
        body: {
          access_token: result.accessToken,
          token_type: "Bearer",
          expires_in: result.expiresIn,
          ...(result.refreshToken && { refresh_token: result.refreshToken }),
        },
        headers: NO_STORE,
        onWritten,
      };
    }
    const status = result.error === "invalid_client" ? 401 : 400;
    return oauthError(status, result.error, result.description);
  }

  async function deviceGrant(fields: Map<string, string>, clientAddress: string): Promise<Answer> {
    const deviceCode = fields.get("device_code");
    const clientId = fields.get("client_id");
    if (!deviceCode || !clientId) {
      return oauthError(400, "invalid_request", "Send device_code and client_id");
    }
    if (!(await resolveClient(ctx, deps, clientId, clientAddress))) {
      return oauthError(401, "invalid_client", "Unknown client");
    }
    let audience: string | null = null;
    const resource = fields.get("resource");
    if (resource !== undefined) {
      const partnerId = await partnerOfResource(ctx, resource);
      if (!partnerId) return oauthError(400, "invalid_target", "Unknown resource");
      audience = partnerId;
    }
    const code = deviceCode.slice(0, 100);
    const polled = await pollDeviceLogin(ctx, code, clientId);
    if (!polled.ok) {
      return oauthError(400, polled.error, POLL_ERROR_DESCRIPTIONS[polled.error]);
    }
    const given = { keyId: polled.keyId, accountId: polled.accountId };
    const sealed = sealFor(ctx, { id: polled.keyId, ownerId: polled.accountId }, audience);
    return tokenAnswer(
      { ok: true, accessToken: sealed.sessionToken, expiresIn, refreshToken: polled.userKey },
      // Spent only when the answer reached the device: else the key is taken back.
      (written) => {
        if (!written) void undoDevicePoll(ctx, code, given).catch(() => {});
      },
    );
  }

  return [
    defineEndpoint({
      method: "GET",
      path: "/.well-known/oauth-authorization-server",
      public: true,
      operation: {
        operationId: "oauthMetadata",
        security: [],
        summary: "OAuth 2.0 authorization server metadata (RFC 8414)",
        tags: ["OAuth"],
        responses: { "200": { description: "The metadata" } },
      },
      handle: () => ({
        status: 200,
        body: {
          issuer,
          authorization_endpoint: `${issuer}/oauth/authorize`,
          token_endpoint: `${issuer}/oauth/token`,
          device_authorization_endpoint: `${issuer}/oauth/device_authorization`,
          introspection_endpoint: `${issuer}/oauth/introspect`,
          revocation_endpoint: `${issuer}/oauth/revoke`,
          registration_endpoint: `${issuer}/oauth/register`,
          response_types_supported: ["code"],
          response_modes_supported: ["query"],
          grant_types_supported: ["authorization_code", "refresh_token", DEVICE_CODE_GRANT],
          code_challenge_methods_supported: ["S256"],
          // No scopes: a grant lets its client act as the person, toward one partner or any.
          scopes_supported: [],
          token_endpoint_auth_methods_supported: ["none"],
          revocation_endpoint_auth_methods_supported: ["none"],
          introspection_endpoint_auth_methods_supported: ["client_secret_basic", "bearer"],
          client_id_metadata_document_supported: true,
          authorization_response_iss_parameter_supported: true,
          service_documentation: `${issuer}/docs`,
        },
        headers: { "Cache-Control": "public, max-age=300" },
      }),
    }),
    defineEndpoint({
      method: "POST",
      path: "/oauth/token",
      public: true,
      maxBodyBytes: MAX_FORM_BYTES,
      operation: {
        operationId: "oauthToken",
        security: [],
        summary: "Token endpoint: device code, authorization code (PKCE), refresh token",
        tags: ["OAuth"],
        requestBody: formBody({
          grant_type: z.enum(["authorization_code", "refresh_token", DEVICE_CODE_GRANT]),
          client_id: z.string(),
          code: z.string().optional(),
          code_verifier: z.string().optional(),
          redirect_uri: z.string().optional(),
          refresh_token: z.string().optional(),
          device_code: z.string().optional(),
          resource: z.string().optional(),
        }),
        responses: {
          "200": {
            description: "Tokens (RFC 6749 section 5.1)",
            content: { "application/json": { schema: TokenResponse } },
          },
          "400": refusal("RFC 6749 section 5.2 or RFC 8628 section 3.5"),
          "401": refusal("invalid_client"),
          "429": refusal("slow_down: too many tokens for one refresh token"),
        },
      },
      async handle(request) {
        const fields = await readForm(request);
        if (!(fields instanceof Map)) return fields;
        const grantType = fields.get("grant_type");
        if (grantType === DEVICE_CODE_GRANT) return deviceGrant(fields, request.clientIp());
        if (grantType === "refresh_token") {
          const refreshToken = fields.get("refresh_token");
          if (!refreshToken) return oauthError(400, "invalid_request", "Send refresh_token");
          let audience: string | null = null;
          const resource = fields.get("resource");
          if (resource !== undefined) {
            const partnerId = await partnerOfResource(ctx, resource);
            if (!partnerId) return oauthError(400, "invalid_target", "Unknown resource");
            audience = partnerId;
          }
          const result = await refreshGrant(
            ctx,
            { refreshToken, clientId: fields.get("client_id"), audience },
            { perGrant: limits.perUserKey, perAccount: limits.refreshesPerAccount },
          );
          if (result.ok) return tokenAnswer(result);
          if (result.error === "rate_limited") {
            return oauthError(
              429,
              "slow_down",
              "Too many refreshes for this grant or account: wait for Retry-After",
              rateLimitHeaders(result.limit),
            );
          }
          if (result.error === "invalid_grant") {
            const counted = await limits.badKeysPerIp.take(request.clientIp());
            if (!counted.ok) {
              return oauthError(429, "slow_down", "Too many unknown tokens from this address");
            }
          }
          const error = result.error === "invalid_target" ? "invalid_target" : "invalid_grant";
          return oauthError(400, error, result.description);
        }
        if (grantType === "authorization_code") {
          const code = fields.get("code");
          const redirectUri = fields.get("redirect_uri");
          const clientId = fields.get("client_id");
          const verifier = fields.get("code_verifier");
          if (!code || !redirectUri || !clientId || !verifier) {
            return oauthError(
              400,
              "invalid_request",
              "Send code, redirect_uri, client_id and code_verifier",
            );
          }
          return tokenAnswer(
            await redeemAuthorizationCode(ctx, {
              code,
              redirectUri,
              clientId,
              verifier,
              resource: fields.get("resource"),
              clientAddress: request.clientIp(),
            }),
          );
        }
        if (grantType === undefined) return oauthError(400, "invalid_request", "Send grant_type");
        return oauthError(400, "unsupported_grant_type", "Unsupported grant_type");
      },
    }),
    defineEndpoint({
      method: "POST",
      path: "/oauth/device_authorization",
      public: true,
      maxBodyBytes: MAX_FORM_BYTES,
      operation: {
        operationId: "oauthDeviceAuthorization",
        security: [],
        summary: "Start a device login (RFC 8628)",
        tags: ["OAuth"],
        requestBody: formBody({
          client_id: z.string(),
          scope: z.string().optional(),
          client_name: z.string().optional().meta({
            description: "agentpass-cli only: the device's own name, shown as unverified",
          }),
        }),
        responses: {
          "200": {
            description: "The codes (RFC 8628 section 3.2)",
            content: {
              "application/json": {
                schema: z.object({
                  device_code: z.string(),
                  user_code: z.string(),
                  verification_uri: z.string(),
                  expires_in: z.number(),
                  interval: z.number(),
                }),
              },
            },
          },
          "400": refusal("invalid_request"),
          "401": refusal("invalid_client"),
          "429": refusal(
            "slow_down: too many logins started from this address; temporarily_unavailable: too many client metadata documents fetched",
          ),
          "503": refusal("temporarily_unavailable: too many client metadata documents at once"),
        },
      },
      async handle(request) {
        const fields = await readForm(request);
        if (!(fields instanceof Map)) return fields;
        const clientId = fields.get("client_id");
        if (!clientId) return oauthError(400, "invalid_request", "Send client_id");
        const found = await lookUpClient(ctx, deps, clientId, request.clientIp());
        if (!found.ok) return clientLookupRefusal(found);
        const { client } = found;
        const counted = await limits.deviceCodesPerIp.take(request.clientIp());
        if (!counted.ok) {
          return oauthError(
            429,
            "slow_down",
            "Too many logins started from this address",
            rateLimitHeaders(counted),
          );
        }
        const name =
          client.clientId === CLI_CLIENT_ID
            ? (fields.get("client_name") ?? client.clientName)
            : client.clientName;
        const started = await startDeviceLogin(ctx, name, request.clientIp());
        return {
          status: 200,
          body: {
            device_code: started.deviceCode,
            user_code: started.userCode,
            verification_uri: `${issuer}/device`,
            expires_in: started.expiresIn,
            interval: started.interval,
          },
          headers: NO_STORE,
        };
      },
    }),
    defineEndpoint({
      method: "POST",
      path: "/oauth/introspect",
      maxBodyBytes: MAX_FORM_BYTES,
      operation: {
        operationId: "oauthIntrospect",
        summary: "Token introspection for partners (RFC 7662)",
        description:
          'Authenticated with the partner key, as `Authorization: Bearer <partner key>` or as the password of HTTP Basic. Every bad token is exactly `{"active":false}`.',
        tags: ["OAuth"],
        security: [{ partnerKey: [] }],
        requestBody: formBody({ token: z.string(), token_type_hint: z.string().optional() }),
        responses: {
          "200": {
            description: "Active with its claims, or exactly {active:false}",
            content: {
              "application/json": {
                schema: z.object({
                  active: z.boolean(),
                  email: z.string().optional(),
                  sub: z.string().optional(),
                  aud: z.string().optional(),
                  client_id: z.string().optional(),
                  iat: z.number().optional(),
                  exp: z.number().optional(),
                  iss: z.string().optional(),
                  token_type: z.literal("Bearer").optional(),
                }),
              },
            },
          },
          "400": refusal("invalid_request"),
          "401": refusal("invalid_client: a missing, unknown or revoked partner key"),
          "429": refusal("Too many unknown partner keys from this address"),
        },
      },
      async handle(request) {
        const partnerKey = partnerKeyOf(request.header("authorization"));
        const challenge = {
          "WWW-Authenticate": 'Bearer realm="agentpass", Basic realm="agentpass"',
        };
        if (!partnerKey)
          return oauthError(401, "invalid_client", "Send the partner key", challenge);
        const fields = await readForm(request);
        if (!(fields instanceof Map)) return fields;
        const token = fields.get("token");
        if (token === undefined) return oauthError(400, "invalid_request", "Send token");
        const result = await introspectSessionToken(ctx, partnerKey, token.slice(0, 1000));
        if (!result.ok) {
          const counted = await limits.badKeysPerIp.take(request.clientIp());
          if (!counted.ok)
            return oauthError(429, "invalid_client", "Too many unknown partner keys");
          const description =
            result.code === "REVOKED_PARTNER_KEY"
              ? "Partner key has been revoked"
              : "Invalid partner key";
          // The challenge of the scheme the caller used (RFC 6750 section 3, RFC 7617).
          const basic = /^basic /i.test(request.header("authorization") ?? "");
          return oauthError(401, "invalid_client", description, {
            "WWW-Authenticate": basic
              ? 'Basic realm="agentpass"'
              : `Bearer realm="agentpass", error="invalid_token", error_description="${description}"`,
          });
        }
        if (!result.active) return { status: 200, body: { active: false }, headers: NO_STORE };
        return {
          status: 200,
          body: {
            active: true,
            email: result.email,
            sub: result.accountId,
            ...(result.audience && { aud: result.audience }),
            ...(result.clientId && { client_id: result.clientId }),
            iat: Math.floor(result.issuedAt / 1000),
            exp: Math.floor(result.expiresAt / 1000),
            iss: issuer,
            token_type: "Bearer",
          },
          headers: NO_STORE,
        };
      },
    }),
    defineEndpoint({
      method: "POST",
      path: "/oauth/revoke",
      public: true,
      maxBodyBytes: MAX_FORM_BYTES,
      operation: {
        operationId: "oauthRevoke",
        security: [],
        summary: "Revoke a grant by any of its refresh tokens, and every token it made (RFC 7009)",
        tags: ["OAuth"],
        requestBody: formBody({ token: z.string(), token_type_hint: z.string().optional() }),
        responses: {
          "200": { description: "Revoked, or the token was not valid (RFC 7009 section 2.2)" },
          "400": refusal("invalid_request, or unsupported_token_type for an access token"),
          "429": refusal("temporarily_unavailable: too many revocations from this address"),
        },
      },
      async handle(request) {
        const counted = await limits.revocationsPerIp.take(request.clientIp());
        if (!counted.ok) {
          return tooManyRequests(
            counted,
            "Too many revocations from this address: wait for Retry-After",
          );
        }
        const fields = await readForm(request);
        if (!(fields instanceof Map)) return fields;
        const token = fields.get("token");
        if (token === undefined) return oauthError(400, "invalid_request", "Send token");
        const outcome = await revokeByRefreshToken(ctx, token.slice(0, 1000));
        if (outcome === "access_token") {
          return oauthError(
            400,
            "unsupported_token_type",
            "Access tokens live 5 minutes and are not revoked one by one: revoke the refresh token",
          );
        }
        return { status: 200, headers: NO_STORE };
      },
    }),
    defineEndpoint({
      method: "POST",
      path: "/oauth/register",
      public: true,
      maxBodyBytes: MAX_FORM_BYTES,
      operation: {
        operationId: "oauthRegister",
        security: [],
        summary: "Register a public client (RFC 7591)",
        tags: ["OAuth"],
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: z.object({
                redirect_uris: z.array(z.string().max(2000)).min(1).max(10),
                client_name: z.string().max(MAX_CLIENT_NAME_LENGTH).optional(),
                token_endpoint_auth_method: z.literal("none").optional(),
              }),
            },
          },
        },
        responses: {
          "201": { description: "The client's id and its registered metadata" },
          "400": refusal("invalid_redirect_uri or invalid_client_metadata"),
          "429": refusal("temporarily_unavailable: too many clients registered from this address"),
        },
      },
      async handle(request) {
        const counted = await limits.registrationsPerIp.take(request.clientIp());
        if (!counted.ok) {
          return tooManyRequests(
            counted,
            "Too many clients registered from this address: wait for Retry-After",
          );
        }
        const read = await request.readJson();
        const body = read.ok ? read.value : undefined;
        if (typeof body !== "object" || body === null || Array.isArray(body)) {
          return oauthError(400, "invalid_client_metadata", "Send the client's metadata as JSON");
        }
        const result = await registerClient(ctx, body as Record<string, unknown>);
        if (!result.ok) return oauthError(400, result.error, result.description);
        return {
          status: 201,
          body: {
            client_id: result.client.clientId,
            client_id_issued_at: Math.floor(result.issuedAt / 1000),
            client_name: result.client.clientName,
            redirect_uris: result.client.redirectUris,
            token_endpoint_auth_method: "none",
            grant_types: ["authorization_code", "refresh_token"],
            response_types: ["code"],
          },
          headers: NO_STORE,
        };
      },
    }),
  ];
}

/** The partner key of `Authorization: Bearer <key>` or of Basic (its password). */
function partnerKeyOf(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  const [scheme, value] = authorization.split(" ", 2);
  if (!value) return undefined;
  if (scheme?.toLowerCase() === "bearer") return value.trim();
  if (scheme?.toLowerCase() !== "basic") return undefined;
  const decoded = Buffer.from(value, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon === -1) return undefined;
  // RFC 6749 section 2.3.1: the client id and secret are form-encoded before Basic.
  try {
    return decodeURIComponent(decoded.slice(colon + 1).replaceAll("+", " "));
  } catch {
    return undefined;
  }
}
