import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { clientAddressOf, type TrustProxy } from "./client-address.ts";
import type { Answer, Endpoint, EndpointRequest } from "./endpoint.ts";
import { answerError, COMMON_ERRORS, HttpError } from "./http-error.ts";
import { type JsonBody, readIncomingJson, readIncomingText } from "./read-body.ts";

/** A request listener: answers, or hands the request to what comes after. */
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
  /** Requests for a path no endpoint has (the service's pages); unset: JSON 404. */
  fallback?: Listener;
}

interface Route {
  pattern: RegExp | undefined;
  names: string[];
  path: string;
  byMethod: Map<string, Endpoint>;
}

/**
 * The one router of a service's API endpoints, straight on `node:http`: it matches the path,
 * runs the endpoint's handler and writes the answer through `respond`, which gives every answer
 * the shared headers, the request id and its access-log line. A known path asked with another
 * method is a 405 naming the methods it takes; a path no endpoint has goes to `fallback`.
 */
export function createApiListener(endpoints: readonly Endpoint[], options: ApiOptions): Listener {
  const exact = new Map<string, Route>();
  const templated: Route[] = [];
  for (const endpoint of endpoints) {
    const names = [...endpoint.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
    let route = names.length === 0 ? exact.get(endpoint.path) : undefined;
    route ??= templated.find((candidate) => candidate.path === endpoint.path);
    if (!route) {
      route = {
        pattern: patternOf(endpoint.path, names),
        names,
        path: endpoint.path,
        byMethod: new Map(),
      };
      if (names.length === 0) exact.set(endpoint.path, route);
      else templated.push(route);
    }
    route.byMethod.set(endpoint.method, endpoint);
  }

  return (incoming, response) => {
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
    if (!route) {
      if (options.fallback) return options.fallback(incoming, response);
      return respondError(
        new HttpError(COMMON_ERRORS.not_found),
        exchange(incoming, response, path),
      );
    }
    const method = incoming.method === "HEAD" ? "GET" : (incoming.method ?? "GET");
    const endpoint = route.byMethod.get(method);
    const current = exchange(incoming, response, path, route.path);
    if (!endpoint) {
      const allow = allowOf(route);
      if (incoming.method === "OPTIONS") return respond(current, preflight(route, allow));
      return respondError(
        new HttpError(COMMON_ERRORS.method_not_allowed, { headers: { Allow: allow } }),
        current,
      );
    }
    current.cors = endpoint.public === true;
    current.renderError = endpoint.renderError;
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
      maxBodyBytes: endpoint.maxBodyBytes ?? options.maxBodyBytes,
    });
    let answered: ReturnType<Endpoint["handle"]>;
    try {
      answered = endpoint.handle(request);
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
  };

  /** The state of one request between its arrival and its answer. */
  function exchange(
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
      cors: false,
      renderError: undefined as Endpoint["renderError"],
    };
  }
  type Exchange = ReturnType<typeof exchange>;

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
    const requestId = randomUUID();
    const answer = answerError(
      options.mapError ? options.mapError(error) : error,
      options.logger,
      { method: current.incoming.method ?? "GET", path: current.route, requestId },
      options.isUnavailable,
    );
    respond(current, current.renderError ? current.renderError(answer) : answer, requestId);
  }

  /**
   * Writes an answer: the body (as JSON unless it is `content`), `Content-Type`, `X-Content-Type-Options: nosniff`, the
   * request id, CORS for public endpoints, then one access-log line.
   */
  function respond(current: Exchange, answer: Answer, requestId = randomUUID()): void {
    const { incoming, response } = current;
    const data = answer.body === undefined ? answer.content?.data : JSON.stringify(answer.body);
    const headers: Record<string, string | number> = {
      "x-content-type-options": "nosniff",
      "x-request-id": requestId,
    };
    if (data !== undefined) {
      headers["content-type"] = answer.content?.type ?? "application/json";
      headers["content-length"] =
        typeof data === "string" ? Buffer.byteLength(data) : data.byteLength;
    }
    if (current.cors) headers["access-control-allow-origin"] = "*";
    for (const name in answer.headers) headers[name.toLowerCase()] = answer.headers[name] as string;
    const { onWritten } = answer;
    if (onWritten) {
      // A connection that closed while the handler ran (a reset) has already said "close".
      if (response.destroyed || incoming.socket.destroyed) queueMicrotask(() => onWritten(false));
      else response.once("close", () => onWritten(response.writableFinished));
    }
    response.writeHead(answer.status, headers);
    response.end(incoming.method === "HEAD" ? undefined : data);
    logRequest(options.logger, {
      requestId,
      method: incoming.method ?? "GET",
      route: current.route,
      status: answer.status,
      started: current.started,
    });
  }
}

/** What the access log names a request to no known route (its path may hold anything). */
export const UNKNOWN_ROUTE = "(unknown)";

/**
 * The access-log line of one answered request, at `info`: method, route (the path template, such
 * as `/api/notes/{id}`: never the path's own values or the query, which may carry a secret),
 * status, duration and request id.
 */
export function logRequest(
  logger: Logger,
  request: { requestId: string; method: string; route: string; status: number; started: number },
): void {
  const line = {
    requestId: request.requestId,
    method: request.method,
    route: request.route,
    status: request.status,
    ms: Math.round((performance.now() - request.started) * 10) / 10,
  };
  logger.info(line, "request");
}

/**
 * A CORS preflight. Public endpoints allow any origin to send what they take; the others answer
 * no `Access-Control-Allow-Origin`, so no browser page of another origin may call them with a
 * secret. Answered before any authentication: a preflight carries no credentials.
 */
function preflight(route: Route, allow: string): Answer {
  const open = [...route.byMethod.values()].some((endpoint) => endpoint.public === true);
  if (!open) return { status: 204, headers: { Allow: allow } };
  return {
    status: 204,
    headers: {
      Allow: allow,
      "Access-Control-Allow-Origin": "*",
      "Access-Control-Allow-Methods": allow,
      "Access-Control-Allow-Headers": "authorization, content-type",
      "Access-Control-Max-Age": "600",
    },
  };
}

function allowOf(route: Route): string {
  const methods = new Set(route.byMethod.keys());
  if (methods.has("GET")) methods.add("HEAD");
  methods.add("OPTIONS");
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

class ApiRequest implements EndpointRequest {
  readonly method: string;
  readonly incoming: IncomingMessage;
  readonly path: string;
  readonly params: Readonly<Record<string, string>>;
  private readonly url: string;
  private readonly queryStart: number;
  private readonly options: Pick<ApiOptions, "trustProxy" | "maxBodyBytes">;
  #query: URLSearchParams | undefined;

  constructor(
    incoming: IncomingMessage,
    path: string,
    url: string,
    queryStart: number,
    params: Readonly<Record<string, string>>,
    options: Pick<ApiOptions, "trustProxy" | "maxBodyBytes">,
  ) {
    this.incoming = incoming;
    this.method = incoming.method ?? "GET";
    this.path = path;
    this.url = url;
    this.queryStart = queryStart;
    this.params = params;
    this.options = options;
  }

  get query(): URLSearchParams {
    this.#query ??= new URLSearchParams(
      this.queryStart === -1 ? "" : this.url.slice(this.queryStart + 1),
    );
    return this.#query;
  }

  header(name: string): string | undefined {
    const value = this.incoming.headers[name];
    return Array.isArray(value) ? value.join(", ") : value;
  }

  readJson(): Promise<JsonBody> {
    return readIncomingJson(this.incoming, this.options.maxBodyBytes);
  }

  readText(): Promise<string | undefined> {
    return readIncomingText(this.incoming, this.options.maxBodyBytes);
  }

  clientIp(): string {
    return clientAddressOf(this.options.trustProxy, this.incoming);
  }
}
