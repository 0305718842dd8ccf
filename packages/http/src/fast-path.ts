import type { IncomingMessage, ServerResponse } from "node:http";

/** A handler that runs before the framework; false means "not mine, pass it on". */
export type FastPath = (request: IncomingMessage, response: ServerResponse) => boolean;

/** A request header as one string, repeated values joined as Fetch's `Headers#get` joins them. */
export function incomingHeader(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

/**
 * Writes a JSON answer straight to `node:http`, with the headers every JSON answer of ours
 * carries (`Content-Type`, `X-Content-Type-Options: nosniff`) and `headers`.
 */
export function writeJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> | undefined,
): void {
  writeJsonText(response, status, JSON.stringify(body), headers);
}

/** `writeJson` for an answer already serialized (`json`, JSON text). */
export function writeJsonText(
  response: ServerResponse,
  status: number,
  json: string,
  headers: Record<string, string> | undefined,
): void {
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(json),
    "x-content-type-options": "nosniff",
    ...headers,
  });
  response.end(json);
}
