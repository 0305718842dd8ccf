import type { IncomingMessage, ServerResponse } from "node:http";
import { context, propagation, ROOT_CONTEXT, type Tracer, trace } from "@opentelemetry/api";
import type { Logger } from "pino";
import { ApiRequest, headerOf } from "./api-request.ts";
import type { TrustProxy } from "./client-address.ts";
import { requestIdOf, type TraceContext, traceContextOf } from "./correlation.ts";
import { type Answer, type Endpoint, isPage, type Page, type RefusedRequest } from "./endpoint.ts";
import { checkInputDeclared, serveEndpoint } from "./endpoint-input.ts";
import { answerError, COMMON_ERRORS, HttpError, type PlainAnswer } from "./http-error.ts";
import { METRICS_PATH, mayReadMetrics, outcomeCode, type ServiceMetrics } from "./metrics.ts";
import { type ServerSpan, startServerSpan } from "./telemetry.ts";

/** A request listener, as `node:http` calls it. */
export type Listener = (request: IncomingMessage, response: ServerResponse) => void;

export interface ApiOptions {
  logger: Logger;
  /** Bodies over this are refused with 413 before they are read. */
  maxBodyBytes: number;
  trustProxy: TrustProxy;
  /** Errors that mean "the database cannot answer now" (503 with Retry-After, never 500). */
  isUnavailable?: (error: unknown) => boolean;
  /** Turns what a handler threw into what to answer (a domain refusal into an `HttpError`). */
  mapError?: (error: unknown) => unknown;
  /**
   * How refusals and faults are answered on requests that reach no API endpoint: a page, a path
   * nothing serves. Unset: JSON `{ error, code }`, as on the endpoints. (The identity service
   * answers a browser there with an HTML page.)
   */
  renderPageError?: (answer: PlainAnswer, request: RefusedRequest) => Answer;
  /**
   * The service's metrics: every answer is counted and timed, and `/metrics` answers them to
   * whoever `mayReadMetrics` lets in (anyone else: 404, as for a path nothing serves).
   */
  metrics?: ServiceMetrics;
  /** The service's tracer (`startTelemetry`): every request a server span. Unset: none. */
  tracer?: Tracer;
}

/** The routes of one path template, by method. */
interface PathRoutes {
  pattern: RegExp | undefined;
  names: string[];
  path: string;
  byMethod: Map<string, Endpoint | Page>;
  /** Whether an API endpoint is among them: then the path answers CORS preflights. */
  api: boolean;
}

/**
 * The one router of a service, straight on `node:http`, for its API endpoints and its pages
 * alike: it matches the path, runs the handler and writes the answer through `respond`, which
 * gives every answer the shared headers, the request id and its access-log line. A known path
 * asked with another method is a 405 naming the methods it takes; an unknown path is a 404.
 */
export function createApiListener(
  routes: readonly (Endpoint | Page)[],
  options: ApiOptions,
): Listener {
  const exact = new Map<string, PathRoutes>();
  const templated: PathRoutes[] = [];
  for (const definition of routes) {
    const names = [...definition.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
    let route = names.length === 0 ? exact.get(definition.path) : undefined;
    route ??= templated.find((candidate) => candidate.path === definition.path);
    if (!route) {
      route = {
        pattern: patternOf(definition.path, names),
        names,
        path: definition.path,
        byMethod: new Map(),
        api: false,
      };
      if (names.length === 0) exact.set(definition.path, route);
      else templated.push(route);
    }
    route.byMethod.set(definition.method, definition);
    if (!isPage(definition)) {
      checkInputDeclared(definition, names);
      route.api = true;
    }
  }

  const { tracer } = options;
  if (!tracer) return (incoming, response) => dispatch(undefined, incoming, response);
  // Traced: each request a server span under the caller's trace (its `traceparent`, read by
  // the registered propagator), its handler run in that span's context.
  return (incoming, response) => {
    const parent = propagation.extract(ROOT_CONTEXT, incoming.headers);
    const server = startServerSpan(tracer, incoming.method ?? "GET", parent);
    context.with(trace.setSpan(parent, server.span), () => dispatch(server, incoming, response));
  };

  function dispatch(
    server: ServerSpan | undefined,
    incoming: IncomingMessage,
    response: ServerResponse,
  ) {
    const url = incoming.url ?? "/";
    const queryStart = url.indexOf("?");
    const path = queryStart === -1 ? url : url.slice(0, queryStart);
    // A percent-encoded unreserved character names the same path (RFC 3986 section 6.2.2.2).
    let route = exact.get(path) ?? (path.includes("%") ? exact.get(decodePath(path)) : undefined);
    let values: string[] | undefined;
    if (!route) {
      for (const candidate of templated) {
        const match = candidate.pattern?.exec(path);
        if (match) {
          route = candidate;
          values = match.slice(1);
          break;
        }
      }
    }
    if (!route && path === METRICS_PATH && options.metrics) {
      return serveMetrics(
        options.metrics,
        exchange(server, incoming, response, path, METRICS_PATH),
      );
    }
    if (!route) {
      const current = exchange(server, incoming, response, path);
      current.renderError = pageErrorRenderer(current);
      return respondError(new HttpError(COMMON_ERRORS.not_found), current);
    }
    const method = incoming.method === "HEAD" ? "GET" : (incoming.method ?? "GET");
    const definition = route.byMethod.get(method);
    const current = exchange(server, incoming, response, path, route.path);
    if (!definition) {
      const allow = allowOf(route);
      if (!route.api) current.renderError = pageErrorRenderer(current);
      else if (incoming.method === "OPTIONS") return respond(current, preflight(route, allow));
      return respondError(
        new HttpError(COMMON_ERRORS.method_not_allowed, { headers: { Allow: allow } }),
        current,
      );
    }
    let maxBodyBytes = options.maxBodyBytes;
    if (isPage(definition)) {
      current.renderError = pageErrorRenderer(current);
    } else {
      current.cors = definition.public === true;
      current.renderError = definition.renderError;
      current.outcome = definition.outcome;
      maxBodyBytes = definition.maxBodyBytes ?? maxBodyBytes;
    }
    let params: Record<string, string> = {};
    if (values) {
      params = {};
      for (let i = 0; i < route.names.length; i++) {
        const value = decodeSegment(values[i] as string);
        if (value === undefined) {
          return respondError(new HttpError(COMMON_ERRORS.not_found), current);
        }
        params[route.names[i] as string] = value;
      }
    }
    const request = new ApiRequest(incoming, path, url, queryStart, params, {
      trustProxy: options.trustProxy,
      maxBodyBytes,
      requestId: current.requestId,
      trace: current.trace,
    });
    let answered: ReturnType<Endpoint["handle"]>;
    try {
      answered = isPage(definition)
        ? definition.handle(request)
        : serveEndpoint(definition, request);
    } catch (error) {
      return respondError(error, current);
    }
    if (answered instanceof Promise) {
      answered.then(
        (answer) => settle(answer, current),
        (error: unknown) => safely(current, () => respondError(error, current)),
      );
    } else {
      settle(answered, current);
    }
  }

  /** The state of one request between its arrival and its answer. */
  function exchange(
    server: ServerSpan | undefined,
    incoming: IncomingMessage,
    response: ServerResponse,
    path: string,
    route = UNKNOWN_ROUTE,
  ) {
    return {
      incoming,
      response,
      path,
      route,
      started: performance.now(),
      /** The client's `X-Request-Id` if valid, else a new one: on the answer and its log line. */
      requestId: requestIdOf(incoming),
      trace: traceContextOf(incoming),
      cors: false,
      renderError: undefined as ((answer: PlainAnswer) => Answer) | undefined,
      /** The endpoint's `outcome`: its answers are counted by code under it. */
      outcome: undefined as string | undefined,
      /** The request's server span, when the service is traced. */
      server,
    };
  }
  type Exchange = ReturnType<typeof exchange>;

  /**
   * `/metrics`: the registry in Prometheus's text format, to a reader `mayReadMetrics` lets in;
   * to anyone else the 404 of a path nothing serves, whatever the method.
   */
  function serveMetrics(metrics: ServiceMetrics, current: Exchange): void {
    const { incoming } = current;
    if (!mayReadMetrics(incoming, options.trustProxy, metrics.token)) {
      current.renderError = pageErrorRenderer(current);
      respondError(new HttpError(COMMON_ERRORS.not_found), current);
    } else if (incoming.method !== "GET" && incoming.method !== "HEAD") {
      const allow = { Allow: "GET, HEAD" };
      respondError(new HttpError(COMMON_ERRORS.method_not_allowed, { headers: allow }), current);
    } else {
      answerMetrics(metrics, current);
    }
  }

  function answerMetrics(metrics: ServiceMetrics, current: Exchange): void {
    metrics.registry.metrics().then(
      (data) =>
        settle(
          {
            status: 200,
            content: { type: metrics.registry.contentType, data },
            headers: { "Cache-Control": "no-store" },
          },
          current,
        ),
      (error: unknown) => safely(current, () => respondError(error, current)),
    );
  }

  /** The service's renderer of page errors, for this request; none: JSON. */
  function pageErrorRenderer(current: Exchange): Exchange["renderError"] {
    const render = options.renderPageError;
    if (!render) return undefined;
    const request: RefusedRequest = {
      path: current.path,
      header: (name) => headerOf(current.incoming, name),
    };
    return (answer) => render(answer, request);
  }

  function settle(answer: Answer | HttpError, current: Exchange): void {
    safely(current, () =>
      answer instanceof HttpError ? respondError(answer, current) : respond(current, answer),
    );
  }

  /** Writes an answer; one that cannot be written (a body JSON cannot hold) is a 500, not a crash. */
  function safely(current: Exchange, write: () => void): void {
    try {
      write();
    } catch (error) {
      if (current.response.headersSent) current.response.destroy();
      else respondError(error, current);
    }
  }

  function respondError(error: unknown, current: Exchange): void {
    const answer = answerError(
      options.mapError ? options.mapError(error) : error,
      options.logger,
      {
        method: current.incoming.method ?? "GET",
        path: current.route,
        requestId: current.requestId,
      },
      options.isUnavailable,
    );
    if (answer.status === 503) options.metrics?.countUnavailable(String(answer.body.code));
    respond(current, current.renderError ? current.renderError(answer) : answer);
  }

  /**
   * Writes an answer: the body (as JSON unless it is `content`), `Content-Type`, `X-Content-Type-Options: nosniff`, the
   * request id, CORS for public endpoints, then one access-log line.
   */
  function respond(current: Exchange, answer: Answer): void {
    const { incoming, response, requestId } = current;
    const data = answer.body === undefined ? answer.content?.data : JSON.stringify(answer.body);
    const headers: Record<string, string | string[] | number> = {
      "x-content-type-options": "nosniff",
      "x-request-id": requestId,
    };
    if (data !== undefined) {
      headers["content-type"] = answer.content?.type ?? "application/json";
      headers["content-length"] =
        typeof data === "string" ? Buffer.byteLength(data) : data.byteLength;
    }
    if (current.cors) {
      headers["access-control-allow-origin"] = "*";
      // A browser client reads the nonce it must sign (RFC 9449 section 8) and the challenge.
      headers["access-control-expose-headers"] = "DPoP-Nonce, WWW-Authenticate";
    }
    for (const name in answer.headers) {
      headers[name.toLowerCase()] = answer.headers[name] as string | string[];
    }
    const { onWritten } = answer;
    if (onWritten) {
      // A connection that closed while the handler ran (a reset) has already said "close".
      if (response.destroyed || incoming.socket.destroyed) queueMicrotask(() => onWritten(false));
      else response.once("close", () => onWritten(response.writableFinished));
    }
    response.writeHead(answer.status, headers);
    response.end(incoming.method === "HEAD" ? undefined : data);
    const method = incoming.method ?? "GET";
    const ms = performance.now() - current.started;
    const spanContext = current.server?.span.spanContext();
    logRequest(options.logger, {
      requestId,
      method,
      route: current.route,
      status: answer.status,
      ms,
      trace: current.trace,
      ...(spanContext && { span: spanContext }),
    });
    const code = current.outcome ? outcomeCode(answer.status, answer.body) : undefined;
    current.server?.end({ method, route: current.route, status: answer.status, outcome: code });
    const { metrics } = options;
    if (metrics) {
      metrics.observeRequest(method, current.route, answer.status, ms / 1000);
      if (current.outcome && code) metrics.countOutcome(current.outcome, code);
    }
  }
}

/** What the access log names a request to no known route (its path may hold anything). */
const UNKNOWN_ROUTE = "(unknown)";

/**
 * The access-log line of one answered request, at `info`: method, route (the path template, such
 * as `/api/notes/{id}`: never the path's own values or the query, which may carry a secret),
 * status, duration, request id and, for a request with a valid `traceparent`, its trace id.
 */
function logRequest(
  logger: Logger,
  request: {
    requestId: string;
    method: string;
    route: string;
    status: number;
    ms: number;
    trace: TraceContext | undefined;
    /** The request's server span, when traced: its ids are the line's. */
    span?: { traceId: string; spanId: string };
  },
): void {
  const line = {
    requestId: request.requestId,
    method: request.method,
    route: request.route,
    status: request.status,
    ms: Math.round(request.ms * 10) / 10,
    ...(request.span
      ? { traceId: request.span.traceId, spanId: request.span.spanId }
      : request.trace && { traceId: request.trace.traceId }),
  };
  logger.info(line, "request");
}

/**
 * A CORS preflight. Public endpoints allow any origin to send what they take; the others answer
 * no `Access-Control-Allow-Origin`, so no browser page of another origin may call them with a
 * secret. Answered before any authentication: a preflight carries no credentials.
 */
function preflight(route: PathRoutes, allow: string): Answer {
  const open = [...route.byMethod.values()].some(
    (definition) => !isPage(definition) && definition.public === true,
  );
  if (!open) return { status: 204, headers: { Allow: allow } };
  return {
    status: 204,
    headers: {
      Allow: allow,
      "Access-Control-Allow-Origin": "*",
      "Access-Control-Allow-Methods": allow,
      // DPoP (RFC 9449): a browser client sends its proof in a header of that name.
      "Access-Control-Allow-Headers": "authorization, content-type, dpop",
      "Access-Control-Max-Age": "600",
    },
  };
}

/** The methods a path answers: HEAD with GET, and OPTIONS (preflights) where it serves API. */
function allowOf(route: PathRoutes): string {
  const methods = new Set(route.byMethod.keys());
  if (methods.has("GET")) methods.add("HEAD");
  if (route.api) methods.add("OPTIONS");
  return [...methods].sort().join(", ");
}

function patternOf(path: string, names: string[]): RegExp | undefined {
  if (names.length === 0) return undefined;
  const source = path
    .split(/\{\w+\}/)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("([^/]+)");
  return new RegExp(`^${source}$`);
}

function decodePath(path: string): string {
  try {
    return decodeURI(path);
  } catch {
    return path;
  }
}

function decodeSegment(segment: string): string | undefined {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
