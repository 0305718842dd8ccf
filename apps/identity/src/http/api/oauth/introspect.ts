import { defineEndpoint } from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../../context.ts";
import type { HolderProof, HolderRefusal } from "../../../domain/holder-proofs.ts";
import { introspectSessionToken } from "../../../domain/session-tokens.ts";
import type { RateLimiter } from "../../../infra/rate-limit.ts";
import { ERRORS, namingTheCheck } from "../../errors.ts";
import {
  COMMON_REFUSALS,
  formInput,
  MAX_FORM_BYTES,
  NO_STORE,
  oauthError,
  refusal,
  renderOAuthError,
  TokenForm,
  tooManyRequests,
} from "./wire.ts";

const IntrospectionResponse = z
  .object({
    active: z.boolean(),
    email: z.string().optional(),
    sub: z.string().optional(),
    aud: z.string().optional(),
    client_id: z.string().optional(),
    iat: z.number().optional(),
    exp: z.number().optional(),
    iss: z.string().optional(),
    token_type: z.enum(["Bearer", "DPoP"]).optional(),
    cnf: z
      .object({ jkt: z.string() })
      .optional()
      .meta({ description: "RFC 9449: the thumbprint of the key a DPoP-bound token needs" }),
    dpop_error: z
      .enum(["session_token_proof_required", "session_token_proof_invalid"])
      .optional()
      .meta({
        description:
          "With `dpop_method`: why a token bound to a key is inactive for that request (the code `POST /api/verify` answers)",
      }),
    dpop_error_description: z
      .string()
      .optional()
      .meta({ description: "The message `POST /api/verify` answers, naming the failed check" }),
  })
  .meta({ id: "IntrospectionResponse" });

/**
 * The token, and (AgentPass's extension) the request a partner received it with, for AgentPass
 * to check a bound token's DPoP proof as `POST /api/verify` does.
 */
const IntrospectionForm = TokenForm.extend({
  client_id: z.string().optional().meta({
    description: "With client_secret (`client_secret_post`): any id, the key names the partner",
  }),
  client_secret: z
    .string()
    .optional()
    .meta({ description: "The partner key, for a client that authenticates in the body" }),
  dpop_method: z
    .string()
    .min(1)
    .optional()
    .meta({ description: "The method of the request the token came with (the proof's `htm`)" }),
  dpop_url: z
    .url({ protocol: /^https?$/ })
    .optional()
    .meta({
      description: "The absolute URL of that request (the proof's `htu`); sent with dpop_method",
    }),
  dpop_proof: z
    .string()
    .optional()
    .meta({ description: "That request's `DPoP` header; omitted when it had none" }),
});

/**
 * RFC 7662 for partners, authenticated with the partner key as the client secret (the password
 * of Basic, or `client_secret` in the form: RFC 6749 section 2.3.1) or as a Bearer token: the
 * same judgement as `POST /api/verify`, told as introspection.
 */
export function introspectionEndpoint(
  ctx: IdentityContext,
  issuer: string,
  limits: { badKeysPerIp: RateLimiter },
) {
  return defineEndpoint({
    method: "POST",
    path: "/oauth/introspect",
    maxBodyBytes: MAX_FORM_BYTES,
    renderError: renderOAuthError,
    operation: {
      operationId: "oauthIntrospect",
      summary: "Token introspection for partners (RFC 7662)",
      description:
        'Authenticated with the partner key, as the client secret (the password of HTTP Basic, `client_secret_basic`, or `client_secret` in the form, `client_secret_post`; the client id is not checked) or as `Authorization: Bearer <partner key>`; one way only. Every bad token is exactly `{"active":false}`. A token bound to a key (RFC 9449) answers `token_type: "DPoP"` and `cnf.jkt`, for a partner that checks proofs itself. Or AgentPass checks them: send `dpop_method` and `dpop_url` of the request the token came with, and `dpop_proof` when it had a `DPoP` header; a bound token whose proof is missing or fails is `{"active":false,"dpop_error":"session_token_proof_required"|"session_token_proof_invalid","dpop_error_description":"…"}`, the code and message `POST /api/verify` answers, and each proof is accepted once. A token not bound ignores these fields.',
      tags: ["OAuth"],
      security: [{ partnerKey: [] }],
      responses: {
        "200": {
          description: "Active with its claims, or exactly {active:false}",
          content: { "application/json": { schema: IntrospectionResponse } },
        },
        "400": refusal("invalid_request"),
        "401": refusal("invalid_client: a missing, unknown or revoked partner key"),
        "429": refusal("temporarily_unavailable: too many unknown partner keys from this address"),
        ...COMMON_REFUSALS,
      },
    },
    // A request with an Authorization header is judged on it before its form is read; one
    // without may carry the key in the form (`client_secret_post`), judged once it is read.
    admit(request) {
      const authorization = request.header("authorization");
      if (authorization === undefined) return { ok: true, admitted: undefined };
      const partnerKey = partnerKeyOf(authorization);
      if (partnerKey) return { ok: true, admitted: partnerKey };
      return { ok: false, answer: sendTheKey() };
    },
    ...formInput(IntrospectionForm),
    async handle(request, { admitted: fromHeader, body }) {
      const authorization = request.header("authorization");
      // RFC 6749 section 2.3: a client uses one authentication method per request.
      if (fromHeader !== undefined && body.client_secret !== undefined) {
        return oauthError("invalid_request", "Send the partner key one way only");
      }
      const partnerKey = fromHeader ?? body.client_secret;
      if (!partnerKey) return sendTheKey();
      if (body.dpop_method !== undefined && body.dpop_url === undefined) {
        return oauthError("invalid_request", "Send dpop_url with dpop_method");
      }
      const token = body.token.slice(0, 1000);
      const result = await introspectSessionToken(ctx, partnerKey, token, holderProofOf(body));
      if (!result.ok) {
        const counted = await limits.badKeysPerIp.take(request.clientIp());
        if (!counted.ok) return tooManyRequests(counted, "Too many unknown partner keys");
        const description =
          result.code === "REVOKED_PARTNER_KEY"
            ? "Partner key has been revoked"
            : "Invalid partner key";
        // The challenge of the scheme the caller used (RFC 6750 section 3, RFC 7617); a key
        // sent in the form is a client secret, as Basic's password is (RFC 6749 section 5.2).
        const bearer = /^bearer /i.test(authorization ?? "");
        return oauthError("invalid_client", description, {
          "WWW-Authenticate": bearer
            ? `Bearer realm="agentpass", error="invalid_token", error_description="${description}"`
            : 'Basic realm="agentpass"',
        });
      }
      if (!result.active) {
        const refused = result.holderRefusal && dpopErrorOf(result.holderRefusal);
        return { status: 200, body: { active: false, ...refused }, headers: NO_STORE };
      }
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
          token_type: result.jkt ? "DPoP" : "Bearer",
          ...(result.jkt && { cnf: { jkt: result.jkt } }),
          // RFC 8693's actor: the agent acting for the person, who stays `sub`.
          ...(result.agent && { act: { sub: result.agent.id, agent_name: result.agent.name } }),
        },
        headers: NO_STORE,
      };
    },
  });
}

/** The refusal of a request without a partner key, with the challenge of each scheme taken. */
function sendTheKey() {
  return oauthError("invalid_client", "Send the partner key", {
    "WWW-Authenticate": 'Bearer realm="agentpass", Basic realm="agentpass"',
  });
}

/**
 * What the extension's fields ask of a bound token: no check (no `dpop_method`: the partner
 * checks the proof itself against `cnf.jkt`), or that request's proof (null: it had none).
 */
function holderProofOf(form: z.infer<typeof IntrospectionForm>): HolderProof {
  const { dpop_method: method, dpop_url: url, dpop_proof: proof } = form;
  if (method === undefined || url === undefined) return "unchecked";
  return proof === undefined ? null : { proof, method, url };
}

/** A bound token's refused proof, told as `POST /api/verify` tells it: its code and message. */
function dpopErrorOf(refusal: HolderRefusal) {
  if (refusal.code === "SESSION_TOKEN_PROOF_REQUIRED") {
    const { code, message } = ERRORS.session_token_proof_required;
    return { dpop_error: code, dpop_error_description: message };
  }
  const invalid = ERRORS.session_token_proof_invalid;
  return {
    dpop_error: invalid.code,
    dpop_error_description: namingTheCheck(invalid, refusal.description),
  };
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
