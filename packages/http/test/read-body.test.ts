import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import { readIncomingJson } from "../src/read-body.ts";

/** A request body as the server hands it over: a stream with the request's headers. */
function incoming(body: string): IncomingMessage {
  const stream = Readable.from([Buffer.from(body)]) as unknown as IncomingMessage;
  stream.headers = { "content-length": String(Buffer.byteLength(body)) };
  return stream;
}

describe("readIncomingJson", () => {
  it("tells JSON from what is not", async () => {
    assert.deepEqual(await readIncomingJson(incoming('{"sessionToken":"aps_x"}'), 1_000), {
      ok: true,
      value: { sessionToken: "aps_x" },
    });
    assert.deepEqual(await readIncomingJson(incoming("null"), 1_000), { ok: true, value: null });
    for (const text of ["not json", '{"sessionToken":', "{'a':1}", "\u00e9"]) {
      assert.deepEqual(await readIncomingJson(incoming(text), 1_000), { ok: false, empty: false });
    }
    assert.deepEqual(await readIncomingJson(incoming("  \n"), 1_000), { ok: false, empty: true });
  });
});
