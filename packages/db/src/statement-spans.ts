import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";

/** The API's tracer: a no-op until a service registers OpenTelemetry (`startTelemetry`). */
const tracer = trace.getTracer("@agentpass/db");

/**
 * Runs one statement in a client span of the request being traced (OpenTelemetry's database
 * conventions: `db.system.name`, `db.query.text`, the statement's first word as its name). Outside
 * a traced request (no active span: tracing off, or a batch of the service's own) it only runs.
 */
export function inStatementSpan<T>(system: "sqlite" | "postgresql", sql: string, run: () => T): T {
  if (!trace.getActiveSpan()) return run();
  const span = tracer.startSpan(operationOf(sql), {
    kind: SpanKind.CLIENT,
    attributes: { "db.system.name": system, "db.query.text": sql },
  });
  const failed = (error: unknown) => {
    span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
    throw error;
  };
  try {
    const result = run();
    if (result instanceof Promise) {
      return result.then((value: unknown) => {
        span.end();
        return value;
      }, failed) as T;
    }
    span.end();
    return result;
  } catch (error) {
    return failed(error);
  }
}

/** `SELECT`, `INSERT`, …: what the span is named, never a value of the statement. */
function operationOf(sql: string): string {
  return /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? "QUERY";
}
