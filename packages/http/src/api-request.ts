import type { IncomingMessage } from "node:http";
import { clientAddressOf, rateLimitKey, type TrustProxy } from "./client-address.ts";
import type { TraceContext } from "./correlation.ts";
import type { EndpointRequest } from "./endpoint.ts";
import { type JsonBody, readIncomingJson, readIncomingText } from "./read-body.ts";

/** What a request needs of the service to read itself, and what the router named it. */
interface RequestLimits {
  trustProxy: TrustProxy;
  /** Bodies over this are refused with 413 before they are read. */
  maxBodyBytes: number;
  requestId: string;
  trace: TraceContext | undefined;
}

/** A request as the router hands it to an endpoint or a page. */
export class ApiRequest implements EndpointRequest {
  readonly method: string;
  readonly incoming: IncomingMessage;
  readonly path: string;
  readonly params: Readonly<Record<string, string>>;
  readonly requestId: string;
  readonly trace: TraceContext | undefined;
  private readonly url: string;
  private readonly queryStart: number;
  private readonly limits: RequestLimits;
  #query: URLSearchParams | undefined;

  constructor(
    incoming: IncomingMessage,
    path: string,
    url: string,
    queryStart: number,
    params: Readonly<Record<string, string>>,
    limits: RequestLimits,
  ) {
    this.incoming = incoming;
    this.method = incoming.method ?? "GET";
    this.path = path;
    this.url = url;
    this.queryStart = queryStart;
    this.params = params;
    this.limits = limits;
    this.requestId = limits.requestId;
    this.trace = limits.trace;
  }

  get search(): string {
    return this.queryStart === -1 ? "" : this.url.slice(this.queryStart + 1);
  }

  get query(): URLSearchParams {
    this.#query ??= new URLSearchParams(this.search);
    return this.#query;
  }

  header(name: string): string | undefined {
    return headerOf(this.incoming, name);
  }

  readJson(): Promise<JsonBody> {
    return readIncomingJson(this.incoming, this.limits.maxBodyBytes);
  }

  readText(): Promise<string | undefined> {
    return readIncomingText(this.incoming, this.limits.maxBodyBytes);
  }

  clientIp(): string {
    return rateLimitKey(this.clientAddress());
  }

  clientAddress(): string {
    return clientAddressOf(this.limits.trustProxy, this.incoming);
  }
}

/** A request header by lower-case name, repeated values joined with ", ". */
export function headerOf(incoming: IncomingMessage, name: string): string | undefined {
  const value = incoming.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}
