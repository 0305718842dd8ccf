import type { IncomingMessage } from "node:http";
import { BlockList, isIP } from "node:net";

/**
 * Which hops in front of the service are trusted to say who the client is:
 * - `none`: nobody; the client is the socket's peer (the service faces the internet);
 * - `{ hops: n }`: the last `n` proxies (the nearest first), whatever their addresses;
 * - `{ ranges }`: any proxy whose address is in these CIDR ranges (a load balancer's subnet).
 */
export type TrustProxy =
  | "none"
  | (({ hops: number } | { ranges: BlockList }) & {
      /** The one header the trusted proxies write (`TRUST_PROXY_HEADER`); X-Forwarded-For unset. */
      header?: ProxyHeader;
    });

/** Which forwarding header names the client: the one the configured proxy writes. */
export type ProxyHeader = "x-forwarded-for" | "forwarded";

/** `trust` reading `header` (`TRUST_PROXY_HEADER`) only; the other header is ignored. */
export function trustingHeader(trust: TrustProxy, header: ProxyHeader | undefined): TrustProxy {
  return trust === "none" || header === undefined ? trust : { ...trust, header };
}

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
 * The address a request came from: the socket's peer, or, through trusted proxies only, the
 * address they forwarded: the entry the nearest trusted proxy appended, walking left only past
 * proxies trusted in turn, so the entries a client wrote in front of them are never read. An
 * untrusted client's own forwarding headers are ignored, so it cannot pick its own address. One
 * header is read, the one the proxies write (`X-Forwarded-For`, or `Forwarded` with
 * `TRUST_PROXY_HEADER=forwarded`): a client that adds the other gains nothing. IPv4-mapped IPv6
 * is IPv4; "unknown" without a peer. Budgets key on `rateLimitKey` of it; the audit log records
 * it as is.
 */
export function clientAddress(
  trust: TrustProxy,
  peer: string | undefined,
  forwarded: string | undefined,
): string {
  const socket = normalize(peer ?? "");
  if (socket === "") return "unknown";
  if (trust === "none" || !forwarded) return socket;
  const chain = trust.header === "forwarded" ? forwardedChain(forwarded) : xffChain(forwarded);
  return walk(trust, socket, chain);
}

/** `clientAddress` of a Node request; "unknown" without one (a request made in process). */
export function clientAddressOf(trust: TrustProxy, incoming: IncomingMessage | undefined): string {
  if (!incoming) return "unknown";
  const name = trust !== "none" && trust.header === "forwarded" ? "forwarded" : "x-forwarded-for";
  const header = incoming.headers[name];
  const forwarded = Array.isArray(header) ? header.join(", ") : header;
  return clientAddress(trust, incoming.socket.remoteAddress, forwarded || undefined);
}

/**
 * Whether a request comes from this machine: its socket's peer is a loopback address and, when it
 * carries `X-Forwarded-For` or `Forwarded`, the peer is a trusted proxy whose headers name a
 * loopback client too. A request forwarded by a proxy this service does not trust (one on this
 * machine, with `TRUST_PROXY` unset) is not: the proxy may have taken it from anywhere.
 */
export function isLoopbackRequest(trust: TrustProxy, incoming: IncomingMessage): boolean {
  const socket = normalize(incoming.socket.remoteAddress ?? "");
  if (!isLoopbackAddress(socket)) return false;
  const xForwardedFor = String(incoming.headers["x-forwarded-for"] ?? "");
  const rfc7239 = String(incoming.headers.forwarded ?? "");
  if (xForwardedFor === "" && rfc7239 === "") return true;
  if (trust === "none" || !isTrusted(trust, socket, 0)) return false;
  const named = [];
  if (xForwardedFor !== "") named.push(xffChain(xForwardedFor));
  if (rfc7239 !== "") named.push(forwardedChain(rfc7239));
  // A header that names nobody readable, or two that disagree, vouch for no one.
  if (named.some((chain) => chain.length === 0)) return false;
  const clients = new Set(named.map((chain) => walk(trust, socket, chain)));
  return clients.size === 1 && isLoopbackAddress([...clients][0] as string);
}

/** 127.0.0.0/8 or ::1 (IPv4-mapped addresses already normalized to IPv4). */
function isLoopbackAddress(address: string): boolean {
  return address === "::1" || /^127\.\d+\.\d+\.\d+$/.test(address);
}

function isTrusted(trust: Exclude<TrustProxy, "none">, address: string, hop: number): boolean {
  if ("hops" in trust) return hop < trust.hops;
  const family = isIP(address);
  return family !== 0 && trust.ranges.check(address, family === 6 ? "ipv6" : "ipv4");
}

/** From the peer leftwards through `chain`, as far as each hop is trusted to say who sent it. */
function walk(trust: Exclude<TrustProxy, "none">, peer: string, chain: string[]): string {
  let address = peer;
  for (let hop = 0; hop < chain.length && isTrusted(trust, address, hop); hop++) {
    address = chain[chain.length - 1 - hop] as string;
  }
  return address;
}

function xffChain(header: string): string[] {
  return addressChain(header.split(","));
}

function forwardedChain(header: string): string[] {
  const entries = header.match(/for=("[^"]*"|[^;,\s]*)/gi) ?? [];
  return addressChain(entries.map((pair) => pair.slice(4).replace(/^"|"$/g, "")));
}

/** The forwarded addresses, the client's first, each normalized; unreadable entries end it. */
function addressChain(entries: string[]): string[] {
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

/**
 * The key a client's budgets count under: an IPv4 address as is, an IPv6 one by its /48, the
 * block one site is given: a subscriber often holds many /64s (a /56 or a /48), so keying by /64
 * would let it rotate prefixes for fresh budgets.
 */
export function rateLimitKey(address: string): string {
  if (isIP(address) !== 6) return address || "unknown";
  const groups = expandIpv6(address);
  return `${groups.slice(0, 3).join(":")}::/48`;
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
