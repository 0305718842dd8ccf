import { randomBytes, randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";

/**
 * A request id a client or a proxy may give (`X-Request-Id`): 1–128 of letters, digits and
 * `._:-`. Anything else (longer, or with a character a log reader could trip on: spaces, quotes,
 * control characters) is replaced by a fresh id, so what the logs and answers carry stays a token.
 */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * W3C Trace Context: `<version>-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`. Version 00
 * is exactly that; a later version (not `ff`) may carry more after a `-`, which is read past
 * (section 4.3: a parser reads the fields it knows of a version it does not).
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
/** `tracestate`: list members as section 3.3 writes them, at most 512 characters in all. */
const TRACESTATE = /^[\x20-\x2b\x2d-\x7e]*(,[\x20-\x2b\x2d-\x7e]*)*$/;
const MAX_TRACESTATE_CHARS = 512;
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
  /** The `tracestate` that came with it, passed on unchanged to the calls made for it. */
  state?: string;
}

/** The id a request is answered and logged under: the client's `X-Request-Id` if valid, else new. */
export function requestIdOf(incoming: IncomingMessage): string {
  const given = incoming.headers["x-request-id"];
  return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
}

/** The trace context of a valid `traceparent` header (W3C Trace Context), or undefined. */
export function traceContextOf(incoming: IncomingMessage): TraceContext | undefined {
  const header = incoming.headers.traceparent;
  if (typeof header !== "string") return undefined;
  const match = TRACEPARENT.exec(header);
  if (!match) return undefined;
  const [, version = "", traceId = "", parentId = "", flags = "", more] = match;
  if (version === "ff" || (version === "00" && more !== undefined)) return undefined;
  if (traceId === ZERO_TRACE_ID || parentId === ZERO_PARENT_ID) return undefined;
  const state = incoming.headers.tracestate;
  const kept =
    typeof state === "string" && state.length <= MAX_TRACESTATE_CHARS && TRACESTATE.test(state)
      ? state.trim()
      : "";
  return { traceId, parentId, flags, ...(kept && { state: kept }) };
}

/**
 * The `traceparent` of a call this service makes on a traced request's behalf: the same trace,
 * the same flags, a new span id of its own.
 */
export function childTraceparent(trace: TraceContext): string {
  return `00-${trace.traceId}-${randomBytes(8).toString("hex")}-${trace.flags}`;
}
