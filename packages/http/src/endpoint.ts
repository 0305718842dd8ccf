import type { IncomingMessage } from "node:http";
import type { ZodOpenApiOperationObject } from "zod-openapi";
import type { TraceContext } from "./correlation.ts";
import type { ErrorDef, HttpError, PlainAnswer } from "./http-error.ts";
import type { JsonBody } from "./read-body.ts";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** What a handler sees of a request. */
export interface EndpointRequest {
  readonly method: string;
  /** The path, without the query. */
  readonly path: string;
  /** The path's `{name}` segments, decoded. */
  readonly params: Readonly<Record<string, string>>;
  /** The query's parameters, decoded. */
  readonly query: URLSearchParams;
  /** The query as sent, without its `?` ("" for none). */
  readonly search: string;
  /** A header by lower-case name, repeated values joined with ", ". */
  header(name: string): string | undefined;
  /** The body as JSON whatever its Content-Type; a 413 `HttpError` over the service's limit. */
  readJson(): Promise<JsonBody>;
  /** The body as UTF-8 text (undefined when it is not); a 413 over the service's limit. */
  readText(): Promise<string | undefined>;
  /**
   * The key the client's budgets count under: its address (`clientAddress`), an IPv6 one by its
   * /48 (`rateLimitKey`). Never recorded as where a request came from.
   */
  clientIp(): string;
  /** The client's address, through the proxies the service trusts: what the audit log records. */
  clientAddress(): string;
  /**
   * The id the request is answered (`X-Request-Id`) and logged under: the client's own
   * `X-Request-Id` when it is 1–128 of `[A-Za-z0-9._:-]`, else a new UUID. A call made on the
   * request's behalf passes it on, so one id follows the request through every service's log.
   */
  readonly requestId: string;
  /** The trace of a valid W3C `traceparent` header; its trace id is on the access-log line. */
  readonly trace: TraceContext | undefined;
  readonly incoming: IncomingMessage;
}

/** What an error renderer may read of the request it answers. */
export type RefusedRequest = Pick<EndpointRequest, "path" | "header">;

/** An answer: `body` written as JSON, or `content` as it is (none for a 204). */
export interface Answer {
  status: number;
  body?: unknown;
  content?: { type: string; data: string | Uint8Array };
  /** Headers by name; a list is sent as that many headers (`Set-Cookie`). */
  headers?: Record<string, string | string[]>;
  /**
   * Called once the exchange ends: true when the answer was handed whole to the network, false
   * when the connection closed before (the client never got it). For answers that give a secret
   * once, so what was given can be taken back.
   */
  onWritten?: (written: boolean) => void;
}

/**
 * One API endpoint, defined once: where it is, what it takes and answers (the OpenAPI operation,
 * built from zod schemas), which refusals of the service's error table it may give, and its
 * handler. The one router serves it (`createApiListener`) and the OpenAPI document describes it
 * (`buildOpenApiDocument`), both from this definition.
 */
export interface Endpoint {
  method: Method;
  /** An OpenAPI path template: `/api/notes/{id}`. */
  path: string;
  /** The operation as documented, its success responses included. */
  operation: Omit<ZodOpenApiOperationObject, "responses"> & {
    responses: ZodOpenApiOperationObject["responses"];
  };
  /** Every refusal the handler may answer, for the document; 500 and 503 are implied. */
  errors?: readonly ErrorDef[];
  /**
   * Any origin may read the answer (CORS): public data. Every other endpoint carries a secret
   * (a key, a token) and answers no cross-origin read.
   */
  public?: boolean;
  /** Left out of the OpenAPI document (the document itself, the pages that render it). */
  undocumented?: boolean;
  /** A body limit below the service's. */
  maxBodyBytes?: number;
  /**
   * Counts every answer of the endpoint by its code under this operation name
   * (`agentpass_outcomes_total{operation, code}`, `ok` for a success): the hot paths, verify and
   * mint, whose refusals an operator watches.
   */
  outcome?: string;
  /**
   * The endpoint's own wire format for what the router answers when the handler did not (a body
   * too large, a fault, a database out of reach): the router's `{ error, code }` answer in,
   * the endpoint's out (OAuth endpoints answer RFC 6749's `{ error, error_description }`).
   */
  renderError?: (answer: PlainAnswer) => Answer;
  handle(request: EndpointRequest): Promise<Answer | HttpError> | Answer | HttpError;
}

/** Identity function that types an endpoint definition. */
export function defineEndpoint(endpoint: Endpoint): Endpoint {
  return endpoint;
}

/**
 * A page (an HTML view or form, an asset), served by the same router as the endpoints: the same
 * request, the same answer, request id and access-log line. Pages are not API: the OpenAPI
 * document leaves them out, and a path only pages serve answers no CORS preflight.
 */
export interface Page {
  method: "GET" | "POST";
  /** A path template like an endpoint's: `/keys/{keyId}/revoke`. */
  path: string;
  handle(request: EndpointRequest): Promise<Answer> | Answer;
}

/** Identity function that types a page definition. */
export function definePage(page: Page): Page {
  return page;
}

/** Whether a route the router serves is a page, not an API endpoint. */
export function isPage(route: Endpoint | Page): route is Page {
  return !("operation" in route);
}
