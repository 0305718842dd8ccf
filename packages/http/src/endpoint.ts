import type { IncomingMessage } from "node:http";
import type { z } from "zod";
import type { ZodOpenApiOperationObject } from "zod-openapi";
import type { TraceContext } from "./correlation.ts";
import type { ErrorDef, HttpError, PlainAnswer } from "./http-error.ts";
import type { JsonBody } from "./read-body.ts";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** What a page sees of a request: all of it, its query and body read as the page chooses. */
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
 * What an endpoint's handler sees of a request beside its input: the method and path (a DPoP
 * proof names them), headers, the client, the ids.
 * Its path parameters, query and body reach it only as `input`, parsed by the schemas the
 * endpoint documents, so a handler cannot read a field its document does not name.
 */
export type ApiCall = Pick<
  EndpointRequest,
  "method" | "path" | "header" | "clientIp" | "clientAddress" | "requestId" | "trace"
>;

/** How an endpoint's body is sent: JSON, an HTML or OAuth form, or either. */
export type BodyEncoding = "json" | "form" | "json or form";

/**
 * What an endpoint takes, as zod schemas. The router parses every request through them before
 * the handler runs, and the OpenAPI document is generated from them: what is documented is what
 * is checked.
 */
export interface EndpointInput {
  /** The path's `{name}` segments (decoded), as one object. */
  params?: z.ZodType;
  /** The query's parameters, the first value of a repeated one, as one object. */
  query?: z.ZodType;
  body?: z.ZodType;
  /** How the body is sent; `json` by default. */
  encoding?: BodyEncoding;
  /** Whether a body must be sent (default true); an empty optional body parses as `{}`. */
  bodyRequired?: boolean;
}

/** How deeply a JSON body may nest: schemas and presenters may walk it recursively. */
export const MAX_JSON_DEPTH = 64;

/** Why the router refused a request's input before its handler ran. */
export type InputFailure =
  | { part: "body"; problem: "not_json" | "not_form" | "too_deep" }
  /** A form that names a field twice (RFC 6749 section 3.2 forbids it). */
  | { part: "body"; problem: "repeated"; field: string }
  | { part: "params" | "query" | "body"; problem: "schema"; error: z.ZodError };

/** What `admit` decided: the request is read, with what it found, or refused with an answer. */
export type Admission<A> = { ok: true; admitted: A } | { ok: false; answer: Answer | HttpError };

type Parsed<S> = S extends z.ZodType ? z.output<S> : undefined;

/** An endpoint's input as its handler gets it: parsed, typed, and nothing else. */
export interface ParsedInput<I extends EndpointInput, A> {
  params: Parsed<I["params"]>;
  query: Parsed<I["query"]>;
  body: Parsed<I["body"]>;
  /** What `admit` answered. */
  admitted: A;
}

/**
 * One API endpoint, defined once: where it is, what it takes (`input`, parsed by the router and
 * documented from the same schemas) and answers (the OpenAPI operation), which refusals of the
 * service's error table it may give, and its handler. The one router serves it
 * (`createApiListener`) and the OpenAPI document describes it (`buildOpenApiDocument`), both from
 * this definition.
 */
export interface Endpoint<I extends EndpointInput = EndpointInput, A = unknown> {
  method: Method;
  /** An OpenAPI path template: `/api/notes/{id}`. */
  path: string;
  /**
   * The operation as documented, its success responses included; its parameters and body are
   * generated from `input`.
   */
  operation: Omit<ZodOpenApiOperationObject, "responses" | "requestBody" | "requestParams"> & {
    responses: ZodOpenApiOperationObject["responses"];
  };
  /** What the endpoint takes; an endpoint with `{name}` segments in its path names `params`. */
  input?: I;
  /**
   * The answer to input `input`'s schemas refuse (required with `input`): the endpoint's
   * documented 400, its message kept exactly.
   */
  refuseInput?(failure: InputFailure): Answer | HttpError;
  /**
   * Whether the request is read at all, from its headers and client only: a credential, a
   * budget. Run before the input is parsed, so a caller refused here is answered the same
   * whatever its body holds, and that body is never read. Its result reaches the handler as
   * `input.admitted`; a refusal's answer (or an `HttpError` thrown) is answered.
   */
  admit?(request: ApiCall): Promise<Admission<A>> | Admission<A>;
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
  handle(
    request: ApiCall,
    input: ParsedInput<I, A>,
  ): Promise<Answer | HttpError> | Answer | HttpError;
}

/**
 * Types an endpoint definition: its handler's input from its schemas and `admit`.
 *
 * @example
 * defineEndpoint({
 *   method: "POST",
 *   path: "/api/tags",
 *   operation: { operationId: "createTag", responses: { "201": created } },
 *   input: { body: z.object({ name: z.string() }) },
 *   refuseInput: () => new HttpError(ERRORS.invalid_body),
 *   handle: (request, { body }) => ({ status: 201, body: { name: body.name } }),
 * });
 */
export function defineEndpoint<I extends EndpointInput = EndpointInput, A = undefined>(
  endpoint: Endpoint<I, A>,
): Endpoint {
  return endpoint as Endpoint;
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
