import type { IncomingMessage } from "node:http";
import { COMMON_ERRORS, HttpError, requestAborted } from "./http-error.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

export type JsonBody = { ok: true; value: unknown } | { ok: false; empty: boolean };

/**
 * The body of a Node request as JSON whatever its Content-Type: a 413 `HttpError` over
 * `maxBytes` (by Content-Length, before reading, or as it arrives). Invalid UTF-8 counts as not
 * JSON. Read straight from the socket's IncomingMessage: a Fetch `Request` would build a web
 * stream for every request, which costs more than the whole verify.
 */
export async function readIncomingJson(
  incoming: IncomingMessage,
  maxBytes: number,
): Promise<JsonBody> {
  if (Number(incoming.headers["content-length"]) > maxBytes) throw tooLarge();
  return parseJsonText(decode(await readIncoming(incoming, maxBytes)));
}

/** The body of a Node request as UTF-8 text (undefined when it is not); 413 over `maxBytes`. */
export async function readIncomingText(
  incoming: IncomingMessage,
  maxBytes: number,
): Promise<string | undefined> {
  if (Number(incoming.headers["content-length"]) > maxBytes) throw tooLarge();
  return decode(await readIncoming(incoming, maxBytes));
}

/** JSON text as a value; text that is not JSON is a value too (a 400), not an exception. */
function parseJsonText(text: string | undefined): JsonBody {
  if (text === undefined) return { ok: false, empty: false };
  if (text.trim() === "") return { ok: false, empty: true };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, empty: false };
  }
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

function tooLarge(): HttpError {
  return new HttpError(COMMON_ERRORS.body_too_large);
}
