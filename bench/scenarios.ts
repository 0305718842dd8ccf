import { randomBytes } from "node:crypto";
import { type BenchDpopKey, dpopProofs } from "./dpop-proofs.ts";
import type { Scenario } from "./measure.ts";
import { BENCH_SEARCH } from "./search-bound.ts";
import type { Server } from "./servers.ts";

/** The standard peer's scenario: RFC 7662 introspection on oidc-provider. */
export const PEER = "oidc-provider introspection (peer)";
/** The bench's search, judged against its database's bound (search-bound.ts). */
export const SEARCH = "notes-search";
/** The partner's hot path, and the same for a token bound to a key, with its proof. */
export const VERIFY = "verify-valid";
export const BOUND_VERIFY = "verify-bound";
/** The request a bound token's partner received, which its proofs are for (RFC 9449 htm, htu). */
const PARTNER_REQUEST = { method: "GET", url: "https://partner.example/api/notes" };

/** What the scenarios send: keys made for the run, and tokens minted for this round. */
interface ScenarioSecrets {
  /** A token of the bench's user, and one of the writer (whose notes the creates are). */
  token: string;
  /** A token of the bench's user bound to `dpopKey` (RFC 9449), which signs its proofs. */
  boundToken: string;
  dpopKey: BenchDpopKey;
  writerToken: string;
  userKey: string;
  partnerKey: string;
  revokedPartnerKey: string;
}

/**
 * Every scenario of a round, the bare ceiling first: what each sends, to which server, and the
 * status it must answer. Built before each round, with that round's session tokens.
 */
export function benchScenarios(
  servers: Record<"ceiling" | "identity" | "notes" | "oidc", Server>,
  secrets: ScenarioSecrets,
): Scenario[] {
  const { ceiling, identity, notes, oidc } = servers;
  const { token, writerToken, userKey, partnerKey } = secrets;
  const verifyBody = (sessionToken: string) => JSON.stringify({ sessionToken });
  const json = { "content-type": "application/json" };
  const searchUrl = `${notes.url}/api/notes?search=${BENCH_SEARCH.search}&limit=${BENCH_SEARCH.limit}`;
  return [
    {
      name: "ceiling (bare node:http)",
      pid: ceiling.pid,
      url: `${ceiling.url}/`,
      method: "POST",
      headers: json,
      body: verifyBody(token),
      expect: 200,
    },
    {
      name: VERIFY,
      pid: identity.pid,
      url: `${identity.url}/api/verify`,
      method: "POST",
      headers: { ...json, authorization: `Bearer ${partnerKey}` },
      body: verifyBody(token),
      expect: 200,
    },
    {
      // The same verify with a proof, a new one each request (AgentPass accepts each once).
      name: BOUND_VERIFY,
      pid: identity.pid,
      url: `${identity.url}/api/verify`,
      method: "POST",
      headers: { ...json, authorization: `Bearer ${partnerKey}` },
      expect: 200,
      oneUseBodies: {
        pacedBy: VERIFY,
        make: async (count) => {
          const { boundToken, dpopKey } = secrets;
          const proven = { ...PARTNER_REQUEST, accessToken: boundToken };
          const proofs = await dpopProofs(dpopKey, proven, count);
          return proofs.map((proof) =>
            JSON.stringify({ sessionToken: boundToken, dpop: { proof, ...PARTNER_REQUEST } }),
          );
        },
      },
    },
    {
      name: "verify-invalid-token",
      pid: identity.pid,
      url: `${identity.url}/api/verify`,
      method: "POST",
      headers: { ...json, authorization: `Bearer ${partnerKey}` },
      body: verifyBody(`aps_${randomBytes(100).toString("base64url")}`),
      expect: 401,
    },
    {
      name: "verify-revoked-key",
      pid: identity.pid,
      url: `${identity.url}/api/verify`,
      method: "POST",
      headers: { ...json, authorization: `Bearer ${secrets.revokedPartnerKey}` },
      body: verifyBody(token),
      expect: 403,
    },
    {
      name: "verify-bad-request",
      pid: identity.pid,
      url: `${identity.url}/api/verify`,
      method: "POST",
      headers: { ...json, authorization: `Bearer ${partnerKey}` },
      body: "not json",
      expect: 400,
    },
    {
      name: "mint",
      pid: identity.pid,
      url: `${identity.url}/api/session-tokens`,
      method: "POST",
      headers: { authorization: `Bearer ${userKey}` },
      expect: 201,
    },
    {
      name: "introspect",
      pid: identity.pid,
      url: `${identity.url}/oauth/introspect`,
      method: "POST",
      headers: {
        authorization: `Bearer ${partnerKey}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: `token=${token}`,
      expect: 200,
    },
    {
      name: "refresh",
      pid: identity.pid,
      url: `${identity.url}/oauth/token`,
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `grant_type=refresh_token&client_id=agentpass-cli&refresh_token=${userKey}`,
      expect: 200,
    },
    {
      name: PEER,
      pid: oidc.pid,
      url: `${oidc.url}/token/introspection`,
      method: "POST",
      headers: {
        authorization: String(oidc.ready.authorization),
        "content-type": "application/x-www-form-urlencoded",
      },
      body: `token=${oidc.ready.token}`,
      expect: 200,
    },
    {
      name: "notes-list-20",
      pid: notes.pid,
      url: `${notes.url}/api/notes?limit=20`,
      method: "GET",
      headers: { "x-session-token": token },
      expect: 200,
    },
    {
      name: "notes-list-100",
      pid: notes.pid,
      url: `${notes.url}/api/notes?limit=100`,
      method: "GET",
      headers: { "x-session-token": token },
      expect: 200,
    },
    {
      name: SEARCH,
      pid: notes.pid,
      url: searchUrl,
      method: "GET",
      headers: { "x-session-token": token },
      expect: 200,
    },
    {
      // One search at a time: its latency without a queue. At 50 connections a search waits
      // behind the others on the service's one thread, and p99 measures that queue.
      name: "notes-search, 1 connection",
      pid: notes.pid,
      url: searchUrl,
      method: "GET",
      headers: { "x-session-token": token },
      expect: 200,
      connections: 1,
    },
    {
      name: "notes-create",
      pid: notes.pid,
      url: `${notes.url}/api/notes`,
      method: "POST",
      headers: { ...json, "x-session-token": writerToken },
      body: JSON.stringify({ title: "Bench note", contentText: "written under load" }),
      expect: 201,
    },
  ];
}
