import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import type { Listener } from "./api-router.ts";

/** A service as the server needs it: what answers its requests, and a way to close what it holds. */
export interface ServableService {
  listener: Listener;
  /**
   * Makes `/readyz` answer 503 from now on: the server is about to stop, and a load balancer
   * must take this instance out before its listener closes.
   */
  beginDrain?(): void;
  close(): Promise<void>;
}

export interface RunningServer {
  /** e.g. http://127.0.0.1:4000 */
  url: string;
  port: number;
  /**
   * Marks the service not ready (`beginDrain`), keeps serving for `drainMs`, then stops accepting
   * connections, closes the idle ones, lets in-flight requests finish (each answered with
   * `Connection: close`, its connection closed after it), and closes the service.
   */
  close(): Promise<void>;
}

/**
 * How long a client may take, so slow or idle sockets cannot pile up: to send its headers, to
 * send its whole request, and to keep an idle connection open between requests. Node checks
 * them every `connectionsCheckingIntervalMs` (its own default, 30 s, let a slow-drip socket live
 * 35 s).
 */
export const SOCKET_LIMITS = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  connectionsCheckingIntervalMs: 1_000,
};

/**
 * Where a service listens when nothing says it may be reached from elsewhere (development):
 * both loopback addresses, since `localhost` resolves to either, and no other interface.
 */
export const LOOPBACK_HOSTS: readonly string[] = ["127.0.0.1", "::1"];

/**
 * How long a stopping server keeps serving after `/readyz` turned 503 (SHUTDOWN_DRAIN_MS in
 * production): a load balancer checking every few seconds must see it and stop sending before
 * the listener closes, or the requests it sends meanwhile are refused. Development waits 0.
 */
export const DEFAULT_DRAIN_MS = 5_000;

export interface ServerOptions {
  port: number;
  /**
   * The address to listen on, or several on one port (`LOOPBACK_HOSTS`); unset: every
   * interface. Of several, one this machine lacks (no IPv6) is skipped.
   */
  host?: string | readonly string[] | undefined;
  /** Open connections past which new ones are dropped at once; unset: no cap. */
  maxConnections?: number | undefined;
  /** Overrides of `SOCKET_LIMITS` (tests use short ones). */
  limits?: Partial<typeof SOCKET_LIMITS>;
  /** How long `close` keeps serving once readiness failed (SHUTDOWN_DRAIN_MS); unset: 0. */
  drainMs?: number | undefined;
}

/** Serves a service over HTTP on `port` (0 picks a free one). */
export async function startServer(
  service: ServableService,
  options: ServerOptions,
): Promise<RunningServer> {
  const hosts = typeof options.host === "object" ? [...options.host] : [options.host];
  if (hosts.length === 0) hosts.push(undefined);
  const { servers, port } = await listenOnEvery(hosts, options, service.listener);
  const first = hosts[0];
  const host = first && first !== "0.0.0.0" ? first : "127.0.0.1";
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    port,
    close: async () => {
      service.beginDrain?.();
      if (options.drainMs) await new Promise((done) => setTimeout(done, options.drainMs));
      await Promise.all(servers.map(closeListenerAndConnections));
      await service.close().catch(() => {});
    },
  };
}

/**
 * Closes `server`'s listener, and its connections as they fall idle: `server.close()` waits for
 * every connection, and a client that keeps sending on a keep-alive one (any pooled client with
 * no load balancer between) would hold the stop open until the forced exit. From now on each
 * answer says `Connection: close`, which makes Node end its connection after it, and a
 * connection idle or fallen idle since (after an answer started before the stop) is closed.
 * Nothing is added to a request before the stop.
 */
function closeListenerAndConnections(server: Server): Promise<void> {
  return new Promise<void>((done) => {
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
    server.close(() => {
      clearInterval(sweep);
      done();
    });
    server.prependListener("request", (_request, response: ServerResponse) => {
      response.setHeader("Connection", "close");
    });
    server.closeIdleConnections();
  });
}

/** How often a closing server closes the connections that fell idle since. */
const IDLE_SWEEP_MS = 50;

/**
 * One server per host, all on the same port: the first picks it when `port` is 0, and if a later
 * host has it taken, all start over on another. A host after the first that this machine lacks
 * (`EADDRNOTAVAIL`: no IPv6 loopback) is skipped.
 */
async function listenOnEvery(
  hosts: (string | undefined)[],
  options: ServerOptions,
  listener: Listener,
): Promise<{ servers: Server[]; port: number }> {
  for (let attempt = 1; ; attempt++) {
    const servers: Server[] = [];
    let port = options.port;
    try {
      for (const [index, host] of hosts.entries()) {
        const server = createHttpServer(listener, options.limits);
        if (options.maxConnections) server.maxConnections = options.maxConnections;
        const error = await listen(server, port, host);
        if (error && index > 0 && isMissingAddress(error)) continue;
        if (error) throw error;
        servers.push(server);
        port = (server.address() as AddressInfo).port;
      }
      return { servers, port };
    } catch (error) {
      await Promise.all(servers.map((server) => new Promise((done) => server.close(done))));
      const taken = (error as NodeJS.ErrnoException).code === "EADDRINUSE";
      if (!(taken && options.port === 0 && servers.length > 0 && attempt < 5)) throw error;
    }
  }
}

/** Listens; the error it failed with, or null. */
function listen(
  server: Server,
  port: number,
  host: string | undefined,
): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolve) => {
    server.once("error", resolve);
    server.listen(port, host, () => resolve(null));
  });
}

function isMissingAddress(error: NodeJS.ErrnoException): boolean {
  return error.code === "EADDRNOTAVAIL" || error.code === "EAFNOSUPPORT";
}

/**
 * The `node:http` server every service runs on: the socket limits, and JSON answers to requests
 * Node refuses itself.
 */
export function createHttpServer(listener: Listener, overrides?: Partial<typeof SOCKET_LIMITS>) {
  const limits = { ...SOCKET_LIMITS, ...overrides };
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: limits.connectionsCheckingIntervalMs,
    },
    listener,
  );
  server.on("clientError", answerClientError);
  return server;
}

/**
 * A request Node refuses before any handler sees it (headers over its 16 KiB limit, a malformed
 * request line) is answered as every other refusal, in JSON, instead of Node's bare status line.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable || (error.code as string) === "ECONNRESET") {
    socket.destroy();
    return;
  }
  const [status, reason, message, code] =
    error.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large", "Request headers too large", "headers_too_large"]
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "Request Timeout", "Request timeout", "request_timeout"]
        : [400, "Bad Request", "Bad request", "bad_request"];
  const body = JSON.stringify({ error: message, code });
  // Written, then closed: a client that sent a broken request gets no second chance on it.
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}
