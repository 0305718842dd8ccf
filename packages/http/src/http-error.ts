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

/** 401 answers name the scheme the caller must use. */
export function unauthorized(message: string): HttpError {
  return new HttpError(401, message, { "WWW-Authenticate": "Bearer" });
}

/**
 * Renders every error as JSON `{ error }`. An error that `isUnavailable` recognises (a database
 * that cannot be reached) is 503 `{ "error": "Service unavailable" }` with Retry-After. Other
 * unexpected errors are logged with a request id and answered 500 with that id only: no stack
 * trace, no message that could carry a secret.
 */
export function createErrorHandler(
  logger: Logger,
  isUnavailable: (error: unknown) => boolean = () => false,
) {
  return (error: Error, c: Context) => {
    if (error instanceof HttpError) return renderError(c, error);
    if (isUnavailable(error)) {
      logger.warn({ method: c.req.method, path: c.req.path, reason: error.message }, "unavailable");
      return c.json({ error: "Service unavailable" }, 503, { "Retry-After": "5" });
    }
    const requestId = randomUUID();
    logger.error(
      { err: error, requestId, method: c.req.method, path: c.req.path },
      "request failed",
    );
    return c.json({ error: "Internal server error", requestId }, 500, {
      "X-Request-Id": requestId,
    });
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
