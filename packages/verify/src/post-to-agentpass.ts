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
  /** The trace's `tracestate`, sent on with `traceparent` (at most 512 characters). */
  tracestate?: string | undefined;
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
const TRACESTATE = /^[\x20-\x2b\x2d-\x7e]*(,[\x20-\x2b\x2d-\x7e]*)*$/;

/**
 * One POST (or PUT) to AgentPass with the partner key as Bearer, answered within `timeoutMs`. Never
 * throws: null when no answer came back (no connection, the time limit, a redirect, a body cut
 * off), which callers report as the network error.
 */
export async function postToAgentPass(
  call: ServiceCall,
  content: { type: string; data: string },
): Promise<ServiceAnswer | null> {
  const otel = await hostTelemetry();
  if (!otel) return post(call, content, false);
  const method = call.method ?? "POST";
  const path = new URL(call.endpoint).pathname;
  return otel.trace
    .getTracer("@agentpass/verify")
    .startActiveSpan(`agentpass ${method} ${path}`, { kind: SPAN_KIND_INTERNAL }, async (span) => {
      try {
        const answer = await post(call, content, true);
        span.setAttribute("http.response.status_code", answer?.status ?? 0);
        const code = answer?.body?.code ?? answer?.body?.error;
        span.setAttribute(
          "agentpass.outcome",
          answer?.status === 200 ? "ok" : String(code ?? "none"),
        );
        if (!answer || answer.status >= 500) span.setStatus({ code: SPAN_STATUS_ERROR });
        return answer;
      } finally {
        span.end();
      }
    });
}

/** The POST itself; `traced`: the host's OpenTelemetry carries the trace, so no header by hand. */
async function post(
  call: ServiceCall,
  content: { type: string; data: string },
  traced: boolean,
): Promise<ServiceAnswer | null> {
  try {
    const headers: Record<string, string> = {
      authorization: `Bearer ${call.partnerKey}`,
      "content-type": content.type,
      accept: "application/json",
    };
    // Read as anything: `verify()` takes its context from any caller, and never throws.
    const { requestId, traceparent, tracestate } = (call.context ?? {}) as Record<string, unknown>;
    if (typeof requestId === "string" && REQUEST_ID.test(requestId)) {
      headers["x-request-id"] = requestId;
    }
    // A host application that runs OpenTelemetry carries the trace itself (its fetch
    // instrumentation): a second traceparent would break it.
    if (!traced && typeof traceparent === "string" && TRACEPARENT.test(traceparent)) {
      headers.traceparent = traceparent;
      if (
        typeof tracestate === "string" &&
        tracestate.length <= 512 &&
        TRACESTATE.test(tracestate)
      ) {
        headers.tracestate = tracestate;
      }
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

/** The slice of the OpenTelemetry API (`@opentelemetry/api`) this library uses. */
interface OpenTelemetryApi {
  trace: {
    getTracer(name: string): {
      startActiveSpan<T>(name: string, options: { kind: number }, run: (span: OtelSpan) => T): T;
    };
  };
  propagation: { fields(): string[] };
}

interface OtelSpan {
  setAttribute(key: string, value: string | number): void;
  setStatus(status: { code: number }): void;
  end(): void;
}

const SPAN_KIND_INTERNAL = 0;
const SPAN_STATUS_ERROR = 2;
/** Named in a variable: the host's, found at run time, never a dependency of this package. */
const OPENTELEMETRY_API = "@opentelemetry/api";
let openTelemetryApi: Promise<OpenTelemetryApi | null> | undefined;

/**
 * The host application's OpenTelemetry, when it has the API installed and a propagator
 * registered (an SDK running): each call is then a span of its trace, and its fetch
 * instrumentation carries the trace to AgentPass. Otherwise null, and nothing is added.
 */
async function hostTelemetry(): Promise<OpenTelemetryApi | null> {
  openTelemetryApi ??= import(OPENTELEMETRY_API).then(
    (api: Partial<OpenTelemetryApi>) =>
      api.trace && api.propagation ? (api as OpenTelemetryApi) : null,
    () => null,
  );
  const api = await openTelemetryApi;
  return api && api.propagation.fields().length > 0 ? api : null;
}
