/** An answer of AgentPass: its status, its headers, and its body if that is a JSON object. */
interface ServiceAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown> | null;
}

/**
 * What a call made on behalf of one of your requests may carry, so that one id follows the
 * request through your logs and AgentPass's: your request's id, sent as `X-Request-Id` (AgentPass
 * logs its answer under it), and its W3C trace context, sent as `traceparent`. A value of another
 * form (a request id outside 1–128 of `[A-Za-z0-9._:-]`, a malformed `traceparent`) is not sent.
 *
 * @example
 * await verifier.verify(token, { requestId: req.headers["x-request-id"] });
 */
export interface CallContext {
  requestId?: string | undefined;
  /** `00-<trace id>-<span id of this call>-<flags>`. */
  traceparent?: string | undefined;
}

export interface ServiceCall {
  endpoint: string;
  partnerKey: string;
  timeoutMs: number;
  fetch: typeof fetch;
  /** Hears why no answer came back (`ECONNREFUSED`, `timed out after 5000 ms`, …), for logs. */
  onFailure?: (reason: string) => void;
  context?: CallContext | undefined;
  /** POST unless said. */
  method?: "POST" | "PUT";
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * One POST (or PUT) to AgentPass with the partner key as Bearer, answered within `timeoutMs`. Never
 * throws: null when no answer came back (no connection, the time limit, a redirect, a body cut
 * off), which callers report as the network error.
 */
export async function postToAgentPass(
  call: ServiceCall,
  content: { type: string; data: string },
): Promise<ServiceAnswer | null> {
  try {
    const headers: Record<string, string> = {
      authorization: `Bearer ${call.partnerKey}`,
      "content-type": content.type,
      accept: "application/json",
    };
    // Read as anything: `verify()` takes its context from any caller, and never throws.
    const { requestId, traceparent } = (call.context ?? {}) as Record<string, unknown>;
    if (typeof requestId === "string" && REQUEST_ID.test(requestId)) {
      headers["x-request-id"] = requestId;
    }
    if (typeof traceparent === "string" && TRACEPARENT.test(traceparent)) {
      headers.traceparent = traceparent;
    }
    const response = await call.fetch(call.endpoint, {
      method: call.method ?? "POST",
      headers,
      body: content.data,
      signal: AbortSignal.timeout(call.timeoutMs),
      redirect: "error",
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: parseJson(text) };
  } catch (error) {
    call.onFailure?.(failureReason(error, call.timeoutMs));
    return null;
  }
}

/**
 * Why a fetch failed, in a few stable words: the system's error code where the runtime gives one
 * (Node's fetch puts it on `cause`), so one cause reads the same on every request.
 */
function failureReason(error: unknown, timeoutMs: number): string {
  const name = (error as { name?: unknown } | null)?.name;
  if (name === "TimeoutError" || name === "AbortError") return `timed out after ${timeoutMs} ms`;
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === "string") return cause.code;
  if (typeof cause?.message === "string") return cause.message;
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === "string" ? message : String(error);
}

function parseJson(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
