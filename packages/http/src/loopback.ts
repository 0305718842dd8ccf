import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Listener } from "./api-router.ts";
import { createHttpServer } from "./server.ts";

/** `fetch` of a path through a service, like Hono's `app.request`, over a real socket. */
export type LoopbackRequest = (path: string, init?: RequestInit) => Promise<Response>;

/**
 * A client of a listener over a loopback socket of its own, started on first use: tests and tools
 * call a service as any client would, through the same server code, without choosing a port.
 * A path may be a full URL; its origin is replaced by the loopback server's. Redirects are
 * answered, not followed.
 */
export function createLoopbackClient(listener: Listener): {
  request: LoopbackRequest;
  close(): Promise<void>;
} {
  let listening: Promise<{ server: Server; origin: string }> | undefined;
  return {
    async request(path, init = {}) {
      listening ??= new Promise((resolve, reject) => {
        const server = createHttpServer(listener);
        // A client left open does not keep the process alive.
        server.unref();
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo;
          resolve({ server, origin: `http://127.0.0.1:${port}` });
        });
      });
      const { origin } = await listening;
      const local = path.replace(/^https?:\/\/[^/]+/, "");
      return fetch(`${origin}${local.startsWith("/") ? local : `/${local}`}`, {
        redirect: "manual",
        ...init,
      });
    },
    async close() {
      if (!listening) return;
      const { server } = await listening;
      listening = undefined;
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
