import { type Span, SpanKind, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { registerInstrumentations } from "@opentelemetry/instrumentation";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider } from "@opentelemetry/sdk-trace-node";

/** A service's tracing, once started: its tracer, and the flush of what is left at shutdown. */
export interface Telemetry {
  tracer: Tracer;
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry the standard way, when the standard variables ask for it: an OTLP/HTTP exporter
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or
 * `OTEL_TRACES_EXPORTER=otlp`; its headers, protocol and batching from `OTEL_*` as the SDK reads
 * them), W3C Trace Context propagation, and the fetch instrumentation that carries the trace to
 * the identity service. `service` names the resource unless `OTEL_SERVICE_NAME` does. Null, and
 * nothing registered, when none is set or `OTEL_SDK_DISABLED=true`: then every span is the API's
 * no-op, and what the router and the stores do for tracing costs a check.
 */
export function startTelemetry(
  service: string,
  env: Record<string, string | undefined> = process.env,
): Telemetry | null {
  if (env.OTEL_SDK_DISABLED === "true") return null;
  const exporter = env.OTEL_TRACES_EXPORTER;
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (exporter === "none" || (exporter !== "otlp" && !endpoint)) return null;
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME ?? service }).merge(
      detectResources({ detectors: [envDetector] }),
    ),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  const unregister = registerInstrumentations({
    instrumentations: [new UndiciInstrumentation()],
    tracerProvider: provider,
  });
  return {
    tracer: provider.getTracer("@agentpass/http"),
    async shutdown() {
      unregister();
      await provider.shutdown();
    },
  };
}

/** The server span of one request, ended when it is answered. */
export interface ServerSpan {
  span: Span;
  /** Names the span after its route template (`GET /api/notes/{id}`) and records the answer. */
  end(answer: { method: string; route: string; status: number; outcome?: string }): void;
}

/** A server span under `parent`'s trace (`SpanKind.SERVER`), or none without a tracer. */
export function startServerSpan(
  tracer: Tracer,
  method: string,
  parent: Parameters<Tracer["startSpan"]>[2],
): ServerSpan {
  const span = tracer.startSpan(
    method,
    { kind: SpanKind.SERVER, attributes: { "http.request.method": method } },
    parent,
  );
  return {
    span,
    end({ method: name, route, status, outcome }) {
      span.updateName(`${name} ${route}`);
      span.setAttribute("http.route", route);
      span.setAttribute("http.response.status_code", status);
      if (outcome) span.setAttribute("agentpass.outcome", outcome);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  };
}

export { trace };
