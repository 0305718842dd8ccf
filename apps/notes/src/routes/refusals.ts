import { HttpError } from "@agentpass/http";
import { ERRORS } from "../errors.ts";
import { isRefusal, type RefusalCode } from "../store/limits.ts";

/** How each store refusal (store/limits.ts) is answered. */
const ANSWERS: Record<RefusalCode, (limit: number) => HttpError> = {
  NOTE_LIMIT: (limit) =>
    new HttpError(ERRORS.note_limit_reached, { message: `Note limit reached (${limit} notes)` }),
  TEXT_LIMIT: (limit) =>
    new HttpError(ERRORS.text_limit_reached, { message: `Text limit reached (${limit} bytes)` }),
  // 503 like the other answers that say "not now": the same search may pass when the service
  // is less busy; one that never does must be narrowed (fewer terms, fewer short ones).
  SEARCH_TIMEOUT: () => new HttpError(ERRORS.search_timeout, { headers: { "Retry-After": "5" } }),
};

/** The `HttpError` a store refusal is answered with; any other error as it is. */
export function answerOfRefusal(error: unknown): unknown {
  return isRefusal(error) ? ANSWERS[error.code](error.limit) : error;
}
