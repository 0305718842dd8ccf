import type { Reply } from "./client.ts";

/** A reply of one loop of a load. */
export interface LoadReply extends Reply {
  loop: string;
}

/**
 * Bounded load: each loop sends its next request once the previous one was answered, after a
 * pause, until `stop`. A loop has at most one request in flight, so the load never grows past
 * the number of loops whatever the cluster does, and a fault can cut off at most one request
 * of each.
 */
export function startLoad(
  loops: Record<string, (round: number) => Promise<Reply | Reply[]>>,
  options: { pauseMs: number },
) {
  const replies: LoadReply[] = [];
  let running = true;
  const done = Object.entries(loops).map(async ([loop, step]) => {
    for (let round = 0; running; round++) {
      const answered = await step(round);
      for (const reply of [answered].flat()) replies.push({ ...reply, loop });
      await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
    }
  });
  return {
    /** What was answered so far. */
    replies,
    /** Stops every loop after its request in flight; resolves with every reply. */
    async stop(): Promise<LoadReply[]> {
      running = false;
      await Promise.all(done);
      return replies;
    },
  };
}

/** How many replies have each status, e.g. `{ 200: 412, 401: 96 }`, as a short text. */
export function countStatuses(replies: Reply[]): string {
  const counts = new Map<number, number>();
  for (const reply of replies) counts.set(reply.status, (counts.get(reply.status) ?? 0) + 1);
  return [...counts]
    .sort(([a], [b]) => a - b)
    .map(([status, count]) => `${count}×${status}`)
    .join(", ");
}

/** How many replies each server gave, as a short text. */
export function countServers(replies: Reply[]): string {
  const counts = new Map<string, number>();
  for (const reply of replies) {
    const server = reply.server ?? "none";
    counts.set(server, (counts.get(server) ?? 0) + 1);
  }
  return [...counts]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([server, count]) => `${server} ${count}`)
    .join(", ");
}

/** One failed reply, for the report: its loop, status, server, and when, from `origin`. */
export function describeFailure(reply: LoadReply, origin: number): string {
  const at = (moment: number) => Math.round(moment - origin);
  const why = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body);
  return (
    `${reply.loop} ${reply.status}${reply.server ? ` from ${reply.server}` : ""} ` +
    `(sent at ${at(reply.sentAt)} ms, answered at ${at(reply.answeredAt)} ms: ${why.slice(0, 80)})`
  );
}
