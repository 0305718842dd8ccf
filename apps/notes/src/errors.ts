import { COMMON_ERRORS, defineErrors } from "@agentpass/http";

/**
 * Every refusal of the notes API, by stable machine code: the code, the status and the message.
 * Answers carry `{ error, code }` (and `details` for a refused body or query); the OpenAPI
 * document lists each endpoint's codes.
 */
export const ERRORS = {
  ...COMMON_ERRORS,
  ...defineErrors({
    invalid_json_body: { status: 400, message: "Request body must be valid JSON" },
    invalid_body: { status: 400, message: "Invalid request body" },
    invalid_query: { status: 400, message: "Invalid query parameters" },
    invalid_note_id: { status: 400, message: "Invalid note id" },
    invalid_tag_id: { status: 400, message: "Invalid tag id" },
    // RFC 6750's code: one request, two different credentials.
    invalid_request: {
      status: 400,
      message:
        "Two different session tokens: send one, as Authorization: Bearer or x-session-token",
    },
    session_token_missing: { status: 401, message: "Missing session token" },
    session_token_invalid: { status: 401, message: "Invalid or expired session token" },
    session_token_unbound: {
      status: 401,
      message:
        "Session token not bound to the notes API: mint it with agentpass token --resource <url> (or --audience <partner id>)",
    },
    // A token bound to the agent's key (RFC 9449), sent without its proof (or as Bearer), or
    // with a proof AgentPass refused: the answer carries AgentPass's own message, which says
    // which check failed.
    session_token_proof_required: {
      status: 401,
      message: "This session token is bound to a key: send its DPoP proof",
    },
    session_token_proof_invalid: { status: 401, message: "Invalid DPoP proof: <which check>" },
    // The token is good: saying so keeps an agent from minting again, or an OAuth client from
    // asking the person to consent again, for an account only the notes API's admin can add.
    no_account: { status: 401, message: "No notes account for this email (the token is valid)" },
    origin_not_allowed: { status: 403, message: "Origin not allowed" },
    note_not_found: { status: 404, message: "Note not found" },
    tag_not_found: { status: 404, message: "Tag not found" },
    tag_exists: { status: 409, message: "Tag already exists" },
    note_limit_reached: { status: 409, message: "Note limit reached (<n> notes)" },
    text_limit_reached: { status: 409, message: "Text limit reached (<n> bytes)" },
    identity_unavailable: { status: 503, message: "Identity service unavailable" },
    search_timeout: { status: 503, message: "Search took too long" },
  }),
};

/** What every authenticated endpoint may answer before its own work. */
export const AUTH_ERRORS = [
  ERRORS.invalid_request,
  ERRORS.session_token_missing,
  ERRORS.session_token_invalid,
  ERRORS.session_token_proof_required,
  ERRORS.session_token_proof_invalid,
  ERRORS.no_account,
  ERRORS.identity_unavailable,
];
