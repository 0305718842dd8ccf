import { type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from "request-filtering-agent";

/** How AgentPass fetches a document named by someone else (a partner's website file). */
export interface FetchPolicy {
  /**
   * Development only: http:// URLs, and loopback, private and link-local addresses. Off, only
   * https to public addresses is fetched.
   */
  allowPrivateNetwork: boolean;
  /** From the call to the last byte of the body: DNS, connect, TLS, headers and body. */
  timeoutMs: number;
  /** A longer body is refused as soon as it passes this. */
  maxBytes: number;
}

/** The limits every fetch runs under unless a test shortens them. */
export const PUBLIC_FETCH_LIMITS = { timeoutMs: 5000, maxBytes: 4096 } as const;

/** Why a document could not be fetched; stable codes a caller can switch on. */
export type FetchFailure =
  /** The URL is not https (or not http(s) at all) and the policy does not allow it. */
  | "not_https"
  /** The name resolved to an address the policy refuses; no connection was made. */
  | "blocked_address"
  /** DNS, connect or TLS failed, or the connection broke. */
  | "unreachable"
  | "timeout"
  /** A 3xx answer: redirects are never followed (the target could be anywhere). */
  | "redirect"
  /** An answer other than 200 or 3xx; `status` says which. */
  | "not_ok"
  | "too_large";

export type FetchResult =
  | { ok: true; body: string }
  | { ok: false; reason: FetchFailure; status?: number };

/**
 * GETs `url` once, as text, with nothing a server could use to reach further: no redirects, no
 * cookies, no credentials, a small body and a time limit. Addresses are checked where the socket
 * connects (request-filtering-agent checks each address DNS answers, just before connecting), so
 * a name that resolves to a public address when checked and a private one when used (DNS
 * rebinding) is still refused. Every outcome is a value; it never throws.
 *
 * @example
 * const fetched = await fetchPublicDocument(
 *   new URL("https://example.com/.well-known/agentpass-verification.txt"),
 *   { allowPrivateNetwork: false, ...PUBLIC_FETCH_LIMITS },
 * );
 * if (fetched.ok) console.log(fetched.body);
 */
export function fetchPublicDocument(url: URL, policy: FetchPolicy): Promise<FetchResult> {
  const secure = url.protocol === "https:";
  if (!secure && !(url.protocol === "http:" && policy.allowPrivateNetwork)) {
    return Promise.resolve({ ok: false, reason: "not_https" });
  }
  const agentOptions = { allowPrivateIPAddress: policy.allowPrivateNetwork, keepAlive: false };
  // A fresh agent per fetch: no pooled connection outlives the fetch that opened it.
  const agent = secure
    ? new RequestFilteringHttpsAgent(agentOptions)
    : new RequestFilteringHttpAgent(agentOptions);
  const send = secure ? httpsRequest : httpRequest;

  return new Promise((resolve) => {
    let settled = false;
    let request: ClientRequest | undefined;
    const finish = (result: FetchResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request?.destroy();
      agent.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish({ ok: false, reason: "timeout" }), policy.timeoutMs);
    request = send(
      url,
      { method: "GET", agent, headers: { "user-agent": "AgentPass", accept: "text/plain, */*" } },
      (response) => readBody(response, policy.maxBytes, finish),
    );
    request.on("error", (error) =>
      finish({ ok: false, reason: isRefusedAddress(error) ? "blocked_address" : "unreachable" }),
    );
    request.end();
  });
}

function readBody(
  response: IncomingMessage,
  maxBytes: number,
  finish: (result: FetchResult) => void,
): void {
  const refusal = refusalOf(response, maxBytes);
  if (refusal) {
    finish(refusal);
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  response.on("data", (chunk: Buffer) => {
    size += chunk.length;
    // Counted as it streams: a body without a length (or lying about it) stops here too.
    if (size > maxBytes) finish({ ok: false, reason: "too_large" });
    else chunks.push(chunk);
  });
  response.on("end", () => finish({ ok: true, body: Buffer.concat(chunks).toString("utf8") }));
  response.on("error", () => finish({ ok: false, reason: "unreachable" }));
}

/** Only a 200 is read, and only if it does not announce a body over the limit. */
function refusalOf(response: IncomingMessage, maxBytes: number): FetchResult | null {
  const status = response.statusCode ?? 0;
  if (status >= 300 && status < 400) return { ok: false, reason: "redirect", status };
  if (status !== 200) return { ok: false, reason: "not_ok", status };
  if (Number(response.headers["content-length"] ?? 0) > maxBytes) {
    return { ok: false, reason: "too_large" };
  }
  return null;
}

/**
 * request-filtering-agent refuses an address with a plain Error (no code) whose message says
 * the address "is not allowed"; with several addresses Node may wrap it in an AggregateError.
 */
function isRefusedAddress(error: Error): boolean {
  if (error instanceof AggregateError) return error.errors.some(isRefusedAddress);
  return / is not allowed\b/.test(error.message);
}

/** A fetch refused by `capConcurrentFetches`: nothing was sent. */
export type CappedFetchResult = FetchResult | { ok: false; reason: "busy" };

/**
 * `fetch`, with at most `max` calls in flight in this process. A call past the cap is answered
 * `busy` at once, without fetching: a flood of documents that answer slowly holds `max` sockets
 * and timers, never a queue that grows with the flood.
 *
 * @example
 * const fetchDocument = capConcurrentFetches((url) => fetchPublicDocument(url, policy), 16);
 */
export function capConcurrentFetches(
  fetch: (url: URL) => Promise<FetchResult>,
  max: number,
): (url: URL) => Promise<CappedFetchResult> {
  let inFlight = 0;
  return async (url) => {
    if (inFlight >= max) return { ok: false, reason: "busy" };
    inFlight++;
    try {
      return await fetch(url);
    } finally {
      inFlight--;
    }
  };
}
