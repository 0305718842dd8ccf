import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { z } from "zod";
import {
  createApiListener,
  defineEndpoint,
  type RunningServer,
  SOCKET_LIMITS,
  startServer,
} from "../src/index.ts";
import { captureLog } from "./support/captured-log.ts";

/** A service that echoes a JSON body, its log lines kept for the test to read. */
function echoService() {
  const { logger, lines } = captureLog();
  const echo = defineEndpoint({
    method: "POST",
    path: "/echo",
    operation: { responses: {} },
    input: { body: z.unknown() },
    refuseInput: () => ({ status: 400, body: { error: "Not JSON" } }),
    handle: (_request, { body }) => ({ status: 200, body: { value: body } }),
  });
  const listener = createApiListener([echo], {
    logger,
    maxBodyBytes: 1 << 20,
    trustProxy: "none",
    isUnavailable: () => true,
  });
  return { lines, service: { listener, close: async () => {} } };
}

/** A raw connection; resolves with it once connected. */
function open(server: RunningServer): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, "127.0.0.1", () => resolve(socket));
    socket.on("error", reject);
  });
}

/** Resolves, once `socket` closes, with the first line the server sent on it ("" for none). */
function statusLineBeforeClose(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let received = "";
    socket.on("data", (chunk) => {
      received += chunk;
    });
    socket.on("error", () => {});
    socket.once("close", () => resolve(received.split("\r\n")[0] ?? ""));
  });
}

/** Resolves with whether `socket` was closed by the server within `ms`. */
function closedWithin(socket: Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (socket.destroyed || socket.readableEnded) return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

describe("the HTTP server defends its sockets", () => {
  it("has limits on headers, whole requests and idle keep-alive, checked every second", () => {
    assert.deepEqual(SOCKET_LIMITS, {
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 5_000,
      connectionsCheckingIntervalMs: 1_000,
    });
  });

  describe("with short limits", () => {
    let server: RunningServer;
    let echo: ReturnType<typeof echoService>;

    before(async () => {
      echo = echoService();
      server = await startServer(echo.service, {
        port: 0,
        host: "127.0.0.1",
        maxConnections: 20,
        limits: { headersTimeoutMs: 300, requestTimeoutMs: 600, connectionsCheckingIntervalMs: 50 },
      });
    });
    after(() => server.close());

    it("closes sockets that drip their headers, 20 at once", async () => {
      const sockets = await Promise.all(Array.from({ length: 20 }, () => open(server)));
      const drip = setInterval(() => {
        for (const socket of sockets) if (!socket.destroyed) socket.write("X");
      }, 50);
      for (const socket of sockets) socket.write("POST /echo HTTP/1.1\r\nHost: x\r\nX-Slow: ");
      try {
        const closed = await Promise.all(sockets.map((socket) => closedWithin(socket, 30_000)));
        assert.deepEqual(closed, Array(20).fill(true));
      } finally {
        clearInterval(drip);
      }
    });

    it("closes a socket that drips its body past the request limit", async () => {
      const socket = await open(server);
      socket.write("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{");
      const drip = setInterval(() => socket.destroyed || socket.write(" "), 50);
      try {
        assert.equal(await closedWithin(socket, 30_000), true);
      } finally {
        clearInterval(drip);
      }
    });

    it("drops connections past maxConnections at once, and serves again below it", {
      timeout: 30_000,
    }, async () => {
      // Judged by what each socket received before it closed, not by a window in ms (a busy
      // machine stretches those): a dropped one gets nothing; a held one is timed out with a
      // 408 once it has sent no headers for headersTimeoutMs.
      const sockets = await Promise.all(Array.from({ length: 30 }, () => open(server)));
      const statusLines = await Promise.all(sockets.map(statusLineBeforeClose));
      assert.equal(
        statusLines.filter((line) => line === "").length,
        10,
        "the 10 past the cap of 20",
      );
      assert.equal(
        statusLines.filter((line) => line === "HTTP/1.1 408 Request Timeout").length,
        20,
      );
      // The server may count a connection a moment after its client saw it closed.
      for (;;) {
        const answer = await fetch(`${server.url}/echo`, { method: "POST", body: "{}" }).catch(
          () => undefined,
        );
        if (answer) {
          assert.equal(answer.status, 200);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });

    it("logs a client that goes away mid-body as such, not as an outage or a failure", async () => {
      // Beside the access-log lines ("request"), what this request alone logs.
      const logged = () => echo.lines.filter((line) => line.msg !== "request");
      const before = logged().length;
      const socket = await open(server);
      socket.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"a":');
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.destroy();
      for (let i = 0; i < 1_200 && logged().length === before; i++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      assert.deepEqual(
        logged()
          .slice(before)
          .map((line) => line.msg),
        ["client closed the request mid-body"],
      );
    });
  });
});
