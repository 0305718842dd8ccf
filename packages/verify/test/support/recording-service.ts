import type { Server } from "node:http";
import { fakeService } from "./loopback.ts";

/** A request the recording service received: its path, its headers and its body as sent. */
export interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** An answer of the recording service: a status, a JSON body and headers. */
export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/**
 * A loopback service standing where AgentPass would, which keeps every request it receives and
 * answers each with `answer(request)`: for what only a recorded request can show (the body the
 * library sent, how many calls it made).
 */
export async function recordingService(
  answer: (received: Received) => Answer,
): Promise<{ url: string; server: Server; received: Received[] }> {
  const received: Received[] = [];
  const { url, server } = await fakeService((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      body += chunk;
    });
    req.on("end", () => {
      const request = { path: req.url ?? "", headers: req.headers, body };
      received.push(request);
      const given = answer(request);
      res.writeHead(given.status, { "content-type": "application/json", ...given.headers });
      res.end(JSON.stringify(given.body));
    });
  });
  return { url, server, received };
}
