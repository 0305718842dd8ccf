export {
  type AuthOptions,
  type AuthResult,
  authenticate,
  failureHeaders,
  SESSION_TOKEN_CHALLENGE,
  SESSION_TOKEN_HEADER,
} from "./authenticate.ts";
export { type IntrospectResult, TOKEN_INACTIVE } from "./call-introspect.ts";
export { type CanonicalEmailResult, canonicalizeEmail } from "./canonical-email.ts";
export type { AuthorizeResult, Capability, DeclareResult } from "./capabilities.ts";
export {
  createVerifier,
  isAgentJwt,
  MAX_CACHE_TTL_MS,
  type Verifier,
  type VerifierFault,
  type VerifierOptions,
} from "./create-verifier.ts";
export { type IntrospectOptions, introspect } from "./introspect.ts";
export type { CallContext } from "./post-to-agentpass.ts";
export type { RequestProof, VerifyContext } from "./request-proof.ts";
export { type Agent, LOCAL_CODES, NETWORK_ERROR, type VerifyResult } from "./result.ts";
export { verify } from "./verify.ts";
