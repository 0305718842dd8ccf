import type { IncomingMessage } from "node:http";
import { BlockList, isIP } from "node:net";

/**
 * Which hops in front of the service are trusted to say who the client is:
 * - `none`: nobody; the client is the socket's peer (the service faces the internet);
 * - `{ hops: n }`: the last `n` proxies (the nearest first), whatever their addresses;
 * - `{ ranges }`: any proxy whose address is in these CIDR ranges (a load balancer's subnet).
 */
export type TrustProxy = "none" | { hops: number } | { ranges: BlockList };

/**
 * Parses `TRUST_PROXY`: unset or `false` trusts nobody; a whole number trusts that many hops;
 * anything else is a comma-separated list of addresses or CIDR ranges (IPv4 or IPv6).
 * Returns an error message for a value it cannot read.
 */
export function parseTrustProxy(value: string | undefined): TrustProxy | { error: string } {
  const text = value?.trim() ?? "";
  if (text === "" || text === "false" || text === "0") return "none";
  if (/^\d+$/.test(text)) return { hops: Number(text) };
  const ranges = new BlockList();
  for (const part of text.split(",").map((entry) => entry.trim())) {
    const [address = "", prefix] = part.split("/");
    const family = isIP(address);
    const bits = prefix === undefined ? (family === 6 ? 128 : 32) : Number(prefix);
    if (family === 0 || !Number.isInteger(bits) || bits < 0 || bits > (family === 6 ? 128 : 32)) {
      return { error: `"${part}" is not an address or a CIDR range` };
    }
    ranges.addSubnet(address, bits, family === 6 ? "ipv6" : "ipv4");
  }
  return { ranges };
}

/**
 * The address a request came from, as a rate-limit key: the socket's peer, or, through trusted
 * proxies only, the address they forwarded (`X-Forwarded-For`, else `Forwarded: for=`). An
 * untrusted client's own forwarding headers are ignored, so it cannot pick its own key. IPv6
 * clients are keyed by their /64, the block one subscriber is usually given.
 */
export function clientAddress(
  trust: TrustProxy,
  peer: string | undefined,
  forwarded: { xForwardedFor?: string | undefined; forwarded?: string | undefined },
): string {
  let address = normalize(peer ?? "");
  if (trust !== "none" && address !== "") {
    const chain = forwardedChain(forwarded);
    for (let hop = 0; hop < chain.length && isTrusted(trust, address, hop); hop++) {
      address = chain[chain.length - 1 - hop] as string;
    }
  }
  return rateLimitKey(address);
}

/** `clientAddress` of a Node request; "unknown" without one (a request made in process). */
export function clientAddressOf(trust: TrustProxy, incoming: IncomingMessage | undefined): string {
  if (!incoming) return "unknown";
  const { headers } = incoming;
  return clientAddress(trust, incoming.socket.remoteAddress, {
    xForwardedFor: String(headers["x-forwarded-for"] ?? "") || undefined,
    forwarded: String(headers.forwarded ?? "") || undefined,
  });
}

function isTrusted(trust: Exclude<TrustProxy, "none">, address: string, hop: number): boolean {
  if ("hops" in trust) return hop < trust.hops;
  const family = isIP(address);
  return family !== 0 && trust.ranges.check(address, family === 6 ? "ipv6" : "ipv4");
}

/** The forwarded addresses, the client's first, each normalized; unreadable entries end it. */
function forwardedChain(headers: { xForwardedFor?: string; forwarded?: string }): string[] {
  const entries = headers.xForwardedFor
    ? headers.xForwardedFor.split(",")
    : (headers.forwarded?.match(/for=("[^"]*"|[^;,\s]*)/gi) ?? []).map((pair) =>
        pair.slice(4).replace(/^"|"$/g, ""),
      );
  const chain = entries.map((entry) => normalize(stripPort(entry.trim())));
  // Everything left of an entry that is not an address is the client's to make up.
  const lastBad = chain.findLastIndex((entry) => isIP(entry) === 0);
  return chain.slice(lastBad + 1);
}

function stripPort(entry: string): string {
  if (entry.startsWith("[")) return entry.slice(1, entry.indexOf("]"));
  return /^\d+\.\d+\.\d+\.\d+:\d+$/.test(entry) ? entry.slice(0, entry.lastIndexOf(":")) : entry;
}

/** IPv4-mapped IPv6 (`::ffff:1.2.3.4`, as dual-stack sockets report) is IPv4. */
function normalize(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? (mapped[1] as string) : address.toLowerCase();
}

function rateLimitKey(address: string): string {
  if (isIP(address) !== 6) return address || "unknown";
  const groups = expandIpv6(address);
  return `${groups.slice(0, 4).join(":")}::/64`;
}

function expandIpv6(address: string): string[] {
  const [head = "", tail] = address.split("%")[0]?.split("::") ?? [""];
  // A trailing dotted IPv4 (`64:ff9b::1.2.3.4`) fills two groups.
  const groupsOf = (part: string) =>
    part ? part.split(":").flatMap((group) => (group.includes(".") ? ["0", "0"] : [group])) : [];
  const left = groupsOf(head);
  const right = groupsOf(tail ?? "");
  const zeros = Array(8 - left.length - right.length).fill("0");
  return [...left, ...(tail === undefined ? [] : zeros), ...right].map((group) =>
    Number.parseInt(group, 16).toString(16),
  );
}
