import { HttpError } from "@agentpass/http";
import { isRefusal, type RefusalCode } from "../store/limits.ts";

/** How each store refusal (store/limits.ts) is answered, on the Hono routes and the fast path. */
const ANSWERS: Record<RefusalCode, (limit: number) => HttpError> = {
  NOTE_LIMIT: (limit) => new HttpError(409, `Note limit reached (${limit} notes)`),
  TEXT_LIMIT: (limit) => new HttpError(409, `Text limit reached (${limit} bytes)`),
  // 503 like the other answers that say "not now": the same search may pass when the service
  // is less busy; one that never does must be narrowed (fewer terms, fewer short ones).
  SEARCH_TIMEOUT: () => new HttpError(503, "Search took too long", { "Retry-After": "5" }),
};

/** The `HttpError` a store refusal is answered with; any other error as it is. */
export function answerOfRefusal<E>(error: E): E | HttpError {
  return isRefusal(error) ? ANSWERS[error.code](error.limit) : error;
}
