import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A loopback server that answers every request with `handler`. */
export async function fakeService(
  handler: Parameters<typeof createServer>[1],
): Promise<{ url: string; server: Server }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** The URL of a loopback port nothing listens on (one just freed): connections are refused. */
export async function closedPortUrl(): Promise<string> {
  const { url, server } = await fakeService(() => {});
  await new Promise((resolve) => server.close(resolve));
  return url;
}
