import { randomUUID } from "node:crypto";
import type { Logger } from "pino";

/** One refusal of a service's error table: a stable machine code, its status and message. */
export interface ErrorDef {
  readonly code: string;
  readonly status: number;
  readonly message: string;
}

/**
 * A service's error table: every refusal it answers, by stable machine code. The table feeds the
 * answers (`{ "error": message, "code": code }`) and the OpenAPI document.
 */
export function defineErrors<const T extends Record<string, { status: number; message: string }>>(
  table: T,
): { readonly [K in keyof T & string]: { code: K; status: T[K]["status"]; message: string } } {
  return Object.fromEntries(
    Object.entries(table).map(([code, { status, message }]) => [code, { code, status, message }]),
  ) as never;
}

/** The refusals every service shares. */
export const COMMON_ERRORS = defineErrors({
  body_too_large: { status: 413, message: "Request body too large" },
  body_incomplete: { status: 400, message: "Request body incomplete" },
  not_found: { status: 404, message: "Not found" },
  method_not_allowed: { status: 405, message: "Method not allowed" },
  rate_limited: { status: 429, message: "Too many requests" },
  internal_error: { status: 500, message: "Internal server error" },
  unavailable: { status: 503, message: "Service unavailable" },
});

/**
 * The one error type: a status, a message and a machine code, answered as `{ error, code }`.
 * Handlers on the hot path return a prebuilt instance instead of throwing; anything may still
 * throw one.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string> | undefined;
  /** More fields of the JSON body beside `error` and `code`, such as validation `details`. */
  readonly extra: Record<string, unknown> | undefined;

  constructor(
    def: ErrorDef,
    options: {
      headers?: Record<string, string> | undefined;
      extra?: Record<string, unknown> | undefined;
      /** A message other than the table's (one that names a limit, say). */
      message?: string;
    } = {},
  ) {
    super(options.message ?? def.message);
    this.status = def.status;
    this.code = def.code;
    this.headers = options.headers;
    this.extra = options.extra;
  }

  /** The JSON body: `{ error, code, ...extra }`. */
  get body(): Record<string, unknown> {
    return { error: this.message, code: this.code, ...this.extra };
  }
}

/** The client closed its request before sending the whole body. */
export function requestAborted(): HttpError {
  return new HttpError(COMMON_ERRORS.body_incomplete);
}

/** 401 answers name the scheme the caller must use. */
export function unauthorized(def: ErrorDef): HttpError {
  return new HttpError(def, { headers: { "WWW-Authenticate": "Bearer" } });
}

/** An answer built outside a framework: status, JSON body, headers. */
export interface PlainAnswer {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/**
 * The answer to an error: an `HttpError` as it says; one that `isUnavailable` recognises (a
 * database that cannot be reached) as 503 `{ "error": "Service unavailable" }` with
 * Retry-After; anything else logged with a request id and answered 500 with that id only — no
 * stack trace, no message that could carry a secret.
 */
export function answerError(
  error: unknown,
  logger: Logger,
  request: { method: string; path: string; requestId?: string },
  isUnavailable: (error: unknown) => boolean = () => false,
): PlainAnswer {
  if (error instanceof HttpError) {
    if (error.code === COMMON_ERRORS.body_incomplete.code) {
      logger.info(request, "client closed the request mid-body");
    }
    return { status: error.status, body: error.body, headers: error.headers ?? {} };
  }
  if (isUnavailable(error)) {
    const reason = error instanceof Error ? error.message : String(error);
    logger.warn({ ...request, reason }, "unavailable");
    const { message, code } = COMMON_ERRORS.unavailable;
    return { status: 503, body: { error: message, code }, headers: { "Retry-After": "5" } };
  }
  const requestId = request.requestId ?? randomUUID();
  logger.error({ err: error, requestId, ...request }, "request failed");
  const { message, code } = COMMON_ERRORS.internal_error;
  return {
    status: 500,
    body: { error: message, code, requestId },
    headers: { "X-Request-Id": requestId },
  };
}

export type BearerCredential =
  | { kind: "missing" }
  | { kind: "empty" }
  | { kind: "present"; value: string };

/**
 * Reads `Authorization: Bearer <credential>`. A bare `Bearer` (HTTP stacks strip the trailing
 * space) is an empty credential; anything not starting with `Bearer ` is missing.
 */
export function readBearer(header: string | undefined): BearerCredential {
  if (header === undefined) return { kind: "missing" };
  if (header === "Bearer") return { kind: "empty" };
  if (!header.startsWith("Bearer ")) return { kind: "missing" };
  const value = header.slice(7).trim();
  return value === "" ? { kind: "empty" } : { kind: "present", value };
}
