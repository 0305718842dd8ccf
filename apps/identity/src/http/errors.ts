import { COMMON_ERRORS, defineErrors, type ErrorDef, HttpError } from "@agentpass/http";

/**
 * Every refusal of the identity service's API, by stable machine code: the code, the status and
 * the message (to the letter of the API's contract). Answers carry `{ error, code }`; the
 * OpenAPI document lists each endpoint's codes; clients switch on `code`.
 */
export const ERRORS = {
  ...COMMON_ERRORS,
  ...defineErrors({
    invalid_json_body: { status: 400, message: "Invalid JSON body" },
    invalid_request_body: { status: 400, message: "Invalid request body" },
    session_token_field_invalid: { status: 400, message: "Missing or invalid sessionToken" },
    dpop_field_invalid: { status: 400, message: "Invalid dpop: expected {proof, method, url}" },
    audience_invalid: { status: 400, message: "Invalid audience" },
    partner_key_missing_or_invalid: { status: 401, message: "Missing or invalid partner key" },
    partner_key_missing: { status: 401, message: "Missing partner key" },
    partner_key_invalid: { status: 401, message: "Invalid partner key" },
    session_token_invalid: { status: 401, message: "Invalid or expired session token" },
    session_token_proof_required: {
      status: 401,
      message: "This session token is bound to a key: send its DPoP proof",
    },
    // Both answered as "Invalid DPoP proof: <the check that failed>" (`namingTheCheck`).
    session_token_proof_invalid: { status: 401, message: "Invalid DPoP proof" },
    dpop_proof_invalid: { status: 401, message: "Invalid DPoP proof" },
    // Answered as "Invalid agent JWT: <the check that failed>" (`namingTheCheck`).
    agent_jwt_invalid: { status: 401, message: "Invalid agent JWT" },
    user_key_missing_or_invalid: { status: 401, message: "Missing or invalid user key" },
    user_key_missing: { status: 401, message: "Missing user key" },
    user_key_invalid: { status: 401, message: "Invalid user key" },
    partner_key_revoked: { status: 403, message: "Partner key has been revoked" },
    user_key_revoked: { status: 403, message: "User key has been revoked" },
  }),
};

/**
 * The message of a refusal that names what failed, after the table's: "Invalid DPoP proof: The
 * DPoP proof's htu is not this URL". Clients switch on the code; the check is for people.
 */
export function namingTheCheck(def: ErrorDef, check: string): string {
  return `${def.message}: ${check}`;
}

/** A 401 of the table naming the check that failed, with the challenge of a Bearer key. */
export function unauthorizedNaming(def: ErrorDef, check: string): HttpError {
  return new HttpError(def, {
    message: namingTheCheck(def, check),
    headers: { "WWW-Authenticate": "Bearer" },
  });
}
