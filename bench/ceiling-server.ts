/**
 * The ceiling: a bare node:http server that reads the request body and answers a fixed JSON
 * body — by default the size of a verify answer, or exactly `?bytes=N` bytes, so a scenario with
 * a larger answer (a page of notes) is compared with a ceiling that writes as much. Nothing a
 * real service does can be faster here.
 */
import { createServer } from "node:http";

const VERIFY_ANSWER = JSON.stringify({ email: "bench-user@example.com" });
const bodies = new Map<number, string>();

/** A JSON body of exactly `bytes` bytes (at least the size of `{"pad":""}`). */
function bodyOf(bytes: number): string {
  let body = bodies.get(bytes);
  if (!body) {
    body = JSON.stringify({ pad: "x".repeat(Math.max(0, bytes - 10)) });
    bodies.set(bytes, body);
  }
  return body;
}

const server = createServer((request, response) => {
  const bytes = Number(/[?&]bytes=(\d+)/.exec(request.url ?? "")?.[1] ?? 0);
  const body = bytes > 0 ? bodyOf(bytes) : VERIFY_ANSWER;
  request.resume();
  request.on("end", () => {
    response.writeHead(200, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
    });
    response.end(body);
  });
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address() as { port: number };
  console.log(JSON.stringify({ url: `http://127.0.0.1:${address.port}` }));
});
