/**
 * The ceiling: a bare node:http server that reads the request body and answers a fixed JSON
 * body of the size of a verify answer. Nothing a real service does can be faster here.
 */
import { createServer } from "node:http";

const body = JSON.stringify({ email: "bench-user@example.com" });
const server = createServer((request, response) => {
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
