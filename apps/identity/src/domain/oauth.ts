/**
 * AgentPass as an OAuth 2.1 authorization server, for the model it already has: a consent or a
 * device login is a grant (`grants.ts`) whose refresh token mints session tokens (the access
 * tokens), a partner is the resource server (its registered resource URLs name it), and
 * `POST /api/verify` stays as it is beside RFC 7662 introspection. Results are typed:
 * `{ ok: false, error }` carries the RFC's error code.
 *
 * One concept per file: clients (`oauth-clients.ts`), partners' resource URLs
 * (`oauth-resources.ts`), the authorization code flow (`oauth-authorization.ts`). This file names
 * what the rest of the service uses of them.
 */

export {
  type AuthorizationCheck,
  type AuthorizationRequest,
  CODE_LIFETIME_MS,
  checkAuthorizationRequest,
  issueAuthorizationCode,
  redeemAuthorizationCode,
  type TokenError,
  type TokenResult,
} from "./oauth-authorization.ts";
export {
  CLI_CLIENT_ID,
  CLIENT_LOOKUP_DESCRIPTIONS,
  type ClientDocuments,
  type ClientLookup,
  createClientDocumentCache,
  isVouchedClientId,
  lookUpClient,
  MAX_CLIENT_NAME_LENGTH,
  type OAuthClient,
  type OAuthDeps,
  type RegistrationResult,
  registerClient,
  resolveClient,
} from "./oauth-clients.ts";
export {
  addPartnerResource,
  partnerOfResource,
  partnerResources,
  type ResourceResult,
  removePartnerResource,
} from "./oauth-resources.ts";
