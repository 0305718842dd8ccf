import { COMMON_ERRORS, defineErrors } from "@agentpass/http";

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
    audience_invalid: { status: 400, message: "Invalid audience" },
    partner_key_missing_or_invalid: { status: 401, message: "Missing or invalid partner key" },
    partner_key_missing: { status: 401, message: "Missing partner key" },
    partner_key_invalid: { status: 401, message: "Invalid partner key" },
    session_token_invalid: { status: 401, message: "Invalid or expired session token" },
    user_key_missing_or_invalid: { status: 401, message: "Missing or invalid user key" },
    user_key_missing: { status: 401, message: "Missing user key" },
    user_key_invalid: { status: 401, message: "Invalid user key" },
    partner_key_revoked: { status: 403, message: "Partner key has been revoked" },
    user_key_revoked: { status: 403, message: "User key has been revoked" },
  }),
};
