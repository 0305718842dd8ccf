import { randomBytes, randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";

/**
 * A request id a client or a proxy may give (`X-Request-Id`): 1–128 of letters, digits and
 * `._:-`. Anything else (longer, or with a character a log reader could trip on: spaces, quotes,
 * control characters) is replaced by a fresh id, so what the logs and answers carry stays a token.
 */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** W3C Trace Context, version 00: `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE_ID = "0".repeat(32);
const ZERO_PARENT_ID = "0".repeat(16);

/** The trace a request belongs to, as its valid `traceparent` header named it. */
export interface TraceContext {
  /** 32 lower-case hex digits, never all zeros. */
  traceId: string;
  /** The caller's span: 16 lower-case hex digits, never all zeros. */
  parentId: string;
  /** 2 hex digits (`01`: sampled). */
  flags: string;
}

/** The id a request is answered and logged under: the client's `X-Request-Id` if valid, else new. */
export function requestIdOf(incoming: IncomingMessage): string {
  const given = incoming.headers["x-request-id"];
  return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
}

/** The trace context of a valid `traceparent` header (W3C Trace Context, version 00), or undefined. */
export function traceContextOf(incoming: IncomingMessage): TraceContext | undefined {
  const header = incoming.headers.traceparent;
  if (typeof header !== "string") return undefined;
  const match = TRACEPARENT.exec(header);
  if (!match) return undefined;
  const [, traceId = "", parentId = "", flags = ""] = match;
  if (traceId === ZERO_TRACE_ID || parentId === ZERO_PARENT_ID) return undefined;
  return { traceId, parentId, flags };
}

/**
 * The `traceparent` of a call this service makes on a traced request's behalf: the same trace,
 * the same flags, a new span id of its own.
 */
export function childTraceparent(trace: TraceContext): string {
  return `00-${trace.traceId}-${randomBytes(8).toString("hex")}-${trace.flags}`;
}
