import { randomUUID } from "node:crypto";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Logger } from "pino";

/**
 * The one error type: a status and a message answered as `{ error }`. Routes on the hot path
 * `return renderError(c, error)` with a prebuilt instance instead of throwing (measured: a
 * throw through the framework costs ~50 µs a request); anything may still throw one.
 */
export class HttpError extends Error {
  readonly status: ContentfulStatusCode;
  readonly headers: Record<string, string> | undefined;
  /** More fields of the JSON body beside `error`, such as validation `details`. */
  readonly extra: Record<string, unknown> | undefined;

  constructor(
    status: ContentfulStatusCode,
    message: string,
    headers?: Record<string, string>,
    extra?: Record<string, unknown>,
  ) {
    super(message);
    this.status = status;
    this.headers = headers;
    this.extra = extra;
  }
}

const ABORTED = "Request body incomplete";

/** The client closed its request before sending the whole body. */
export function requestAborted(): HttpError {
  return new HttpError(400, ABORTED);
}

/** 401 answers name the scheme the caller must use. */
export function unauthorized(message: string): HttpError {
  return new HttpError(401, message, { "WWW-Authenticate": "Bearer" });
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
  request: { method: string; path: string },
  isUnavailable: (error: unknown) => boolean = () => false,
): PlainAnswer {
  if (error instanceof HttpError) {
    if (error.message === ABORTED) logger.info(request, "client closed the request mid-body");
    const body = error.extra ? { error: error.message, ...error.extra } : { error: error.message };
    return { status: error.status, body, headers: error.headers ?? {} };
  }
  if (isUnavailable(error)) {
    const reason = error instanceof Error ? error.message : String(error);
    logger.warn({ ...request, reason }, "unavailable");
    return { status: 503, body: { error: "Service unavailable" }, headers: { "Retry-After": "5" } };
  }
  const requestId = randomUUID();
  logger.error({ err: error, requestId, ...request }, "request failed");
  return {
    status: 500,
    body: { error: "Internal server error", requestId },
    headers: { "X-Request-Id": requestId },
  };
}

/** Renders every error as JSON `{ error }`, as `answerError` decides. */
export function createErrorHandler(
  logger: Logger,
  isUnavailable: (error: unknown) => boolean = () => false,
) {
  return (error: Error, c: Context) => {
    if (error instanceof HttpError && error.message !== ABORTED) return renderError(c, error);
    const answer = answerError(
      error,
      logger,
      { method: c.req.method, path: c.req.path },
      isUnavailable,
    );
    return c.json(answer.body, answer.status as ContentfulStatusCode, answer.headers);
  };
}

export function renderError(c: Context, error: HttpError): Response {
  const body = error.extra ? { error: error.message, ...error.extra } : { error: error.message };
  return c.json(body, error.status, error.headers);
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
