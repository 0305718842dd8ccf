import type { IncomingMessage } from "node:http";
import type { Context } from "hono";
import { COMMON_ERRORS, HttpError, requestAborted } from "./http-error.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });
const NO_BYTES = new Uint8Array(0);

export type JsonBody = { ok: true; value: unknown } | { ok: false; empty: boolean };

/**
 * Reads the request body as JSON whatever its Content-Type. Over `maxBytes` is a 413
 * `Request body too large`, refused before reading when Content-Length says so.
 * Invalid UTF-8 counts as not JSON.
 *
 * On Node the body is read straight from the socket's IncomingMessage: going through the Fetch
 * `Request` would build a web stream for every request, which costs more than the whole verify.
 */
export async function readJsonBody(c: Context, maxBytes: number): Promise<JsonBody> {
  return parseJsonText(await readTextBody(c, maxBytes));
}

/**
 * The body of a plain Node request as JSON, for a handler that runs before the framework: a
 * 413 `HttpError` over `maxBytes` (by Content-Length or as it arrives).
 */
export async function readIncomingJson(
  incoming: IncomingMessage,
  maxBytes: number,
): Promise<JsonBody> {
  if (Number(incoming.headers["content-length"]) > maxBytes) throw tooLarge();
  return parseJsonText(decode(await readIncoming(incoming, maxBytes)));
}

/** The body of a plain Node request as UTF-8 text (undefined when it is not); 413 over `maxBytes`. */
export async function readIncomingText(
  incoming: IncomingMessage,
  maxBytes: number,
): Promise<string | undefined> {
  if (Number(incoming.headers["content-length"]) > maxBytes) throw tooLarge();
  return decode(await readIncoming(incoming, maxBytes));
}

/**
 * JSON text as a value. A body that is not JSON is a 400 whose SyntaxError nobody reads, so the
 * error is made without a stack trace, the larger part of what a failed parse costs. An anonymous
 * client may send such bodies at will. `JSON.parse` without a reviver runs none of our code, so
 * nothing else is thrown while the limit is 0.
 */
function parseJsonText(text: string | undefined): JsonBody {
  if (text === undefined) return { ok: false, empty: false };
  if (text.trim() === "") return { ok: false, empty: true };
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, empty: false };
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * Reads the request body as UTF-8 text: undefined when it is not valid UTF-8, a 413
 * `Request body too large` over `maxBytes`.
 */
export async function readTextBody(c: Context, maxBytes: number): Promise<string | undefined> {
  const declared = Number(readHeader(c, "content-length"));
  if (declared > maxBytes) throw tooLarge();
  const incoming = incomingOf(c);
  const bytes = incoming
    ? await readIncoming(incoming, maxBytes)
    : await readFetchBody(c.req.raw, maxBytes);
  return decode(bytes);
}

function decode(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** Plain stream events, which allocate less per request than `for await` over the stream. */
function readIncoming(incoming: IncomingMessage, maxBytes: number): Promise<Uint8Array> {
  // A request without a body arrives already ended (the servers run `optimizeEmptyRequests`).
  if (incoming.readableEnded) return Promise.resolve(NO_BYTES);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    incoming.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        incoming.removeAllListeners("data");
        incoming.resume();
        reject(tooLarge());
      } else {
        chunks.push(chunk);
      }
    });
    incoming.once("end", () =>
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)),
    );
    // A client that goes away mid-body is the client's doing, not a fault of ours or of the
    // database: it is answered (to nobody) and logged as what it is.
    incoming.once("error", () => reject(requestAborted()));
    incoming.once("close", () => {
      if (!incoming.readableEnded) reject(requestAborted());
    });
  });
}

/**
 * A request header by lower-case name. On Node it is read from the parsed IncomingMessage:
 * `c.req.header()` would first build a Fetch `Headers` object for the request.
 */
export function readHeader(c: Context, name: string): string | undefined {
  const incoming = incomingOf(c);
  if (!incoming) return c.req.header(name);
  const value = incoming.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

function incomingOf(c: Context): IncomingMessage | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
}

async function readFetchBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes.length > maxBytes) throw tooLarge();
  return bytes;
}

function tooLarge(): HttpError {
  return new HttpError(COMMON_ERRORS.body_too_large);
}
