import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { freePort, testEngines } from "@agentpass/db/testing";
import { createDpopKey, type DpopKey, dpopHeaders, dpopProof } from "@agentpass/verify/dpop";
import { openTestNotes, type TestNotes } from "./support/harness.ts";

/**
 * The notes API as a DPoP resource server (RFC 9449): a session token bound to the agent's key
 * is taken as `Authorization: DPoP` with a fresh proof of each request, which AgentPass checks;
 * as Bearer, or with a proof of another request, another key, or used before, it is refused
 * with the DPoP challenge. The notes API's PUBLIC_URL is not where the tests reach it: the proof
 * is for the URL the agent was told, never one the request's Host names.
 */

const PUBLIC_URL = "https://notes.example";
const METADATA = `${PUBLIC_URL}/.well-known/oauth-protected-resource`;
/** Where the tests' requests really go is not where the agent was told the API is. */
const ELSEWHERE = "http://notes.internal";
const BOUND = "This session token is bound to a key: send its DPoP proof";
/** AgentPass's Agent Auth discovery, which every 401 names last (set once AgentPass runs). */
let discovery = "";

/** The challenge of a 401 for a bound token's missing (`invalid_token`) or refused proof. */
function dpopChallenge(error: "invalid_token" | "invalid_dpop_proof", description: string) {
  return `Bearer resource_metadata="${METADATA}", DPoP error="${error}", error_description="${description}", algs="ES256 EdDSA", AgentPass-Session header="x-session-token", AgentAuth discovery="${discovery}"`;
}

for (const engine of testEngines()) {
  describe(`notes API: session tokens bound to a DPoP key (${engine})`, () => {
    let notes: TestNotes;

    before(async () => {
      const identityUrl = `http://127.0.0.1:${await freePort()}`;
      notes = await openTestNotes(engine, { PUBLIC_URL: identityUrl }, { PUBLIC_URL });
      discovery = `${identityUrl}/.well-known/agent-configuration`;
      // Proofs carry the wall clock's time (`iat`), which AgentPass takes within a minute of its
      // own: the services' clock starts where the wall clock is.
      notes.advance(Date.now() - notes.now());
    });
    after(() => notes.close());

    /** A person with a notes account, and a session token bound to a new key of their agent. */
    async function boundAgent() {
      const person = await notes.person();
      const key = await createDpopKey();
      const url = `${notes.identity.url}/api/session-tokens`;
      const minted = await fetch(url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${person.key}`,
          dpop: await dpopProof(key, { method: "POST", url }),
        },
      });
      const body = (await minted.json()) as { sessionToken: string; tokenType?: string };
      assert.equal(minted.status, 201, JSON.stringify(body));
      assert.equal(body.tokenType, "DPoP");
      return { person, key, token: body.sessionToken };
    }

    /** One request to the notes API as the agent would send it: the token, a proof for `path`. */
    async function callWithProof(
      key: DpopKey,
      token: string,
      method: string,
      path: string,
      body?: unknown,
    ) {
      const headers = await dpopHeaders(key, token, method, `${PUBLIC_URL}${path}`);
      return send(method, path, headers, body);
    }

    function send(method: string, path: string, headers: Record<string, string>, body?: unknown) {
      return notes.app.request(path, {
        method,
        headers: { "content-type": "application/json", ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    }

    /** A refusal: 401, AgentPass's message and the code in the body, the challenge. */
    async function expectRefusal(
      response: Response,
      code: "session_token_proof_required" | "session_token_proof_invalid",
      error: string,
      what: string = code,
    ) {
      const body = await response.json();
      assert.equal(response.status, 401, `${what}: ${JSON.stringify(body)}`);
      assert.deepEqual(body, { error, code }, what);
      const dpopError =
        code === "session_token_proof_required" ? "invalid_token" : "invalid_dpop_proof";
      assert.equal(response.headers.get("www-authenticate"), dpopChallenge(dpopError, error), what);
    }

    it("serves a bound token with a fresh proof of each request, on every kind of endpoint", async () => {
      const { key, token } = await boundAgent();
      const created = await callWithProof(key, token, "POST", "/api/notes", { title: "Bound" });
      assert.equal(created.status, 201);
      const { note } = (await created.json()) as { note: { id: string } };
      const path = `/api/notes/${note.id}`;
      assert.equal((await callWithProof(key, token, "GET", path)).status, 200);
      const patched = await callWithProof(key, token, "PATCH", path, { title: "Still bound" });
      assert.equal(patched.status, 200);
      // The proof names the URL without its query (RFC 9449 section 4.2).
      const page = await callWithProof(key, token, "GET", "/api/notes?search=still");
      assert.equal(((await page.json()) as { total: number }).total, 1);
      const tag = await callWithProof(key, token, "POST", "/api/tags", { name: "dpop" });
      assert.equal(tag.status, 201);
      assert.equal((await callWithProof(key, token, "DELETE", path)).status, 204);
    });

    it("serves a token bound by the refresh grant, minted with AgentPass's nonce", async () => {
      const person = await notes.person();
      const key = await createDpopKey();
      const tokenUrl = `${notes.identity.url}/oauth/token`;
      const grant = async (nonce?: string) =>
        fetch(tokenUrl, {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            dpop: await dpopProof(key, { method: "POST", url: tokenUrl, nonce }),
          },
          body: new URLSearchParams({
            grant_type: "refresh_token",
            refresh_token: person.key,
            client_id: "agentpass-cli",
          }),
        });
      const first = await grant();
      assert.equal(first.status, 400);
      assert.equal(((await first.json()) as { error: string }).error, "use_dpop_nonce");
      const nonce = first.headers.get("dpop-nonce") ?? "";
      const minted = await grant(nonce);
      const tokens = (await minted.json()) as { access_token: string; token_type: string };
      assert.equal(minted.status, 200, JSON.stringify(tokens));
      assert.equal(tokens.token_type, "DPoP");
      const page = await callWithProof(key, tokens.access_token, "GET", "/api/notes");
      assert.equal(page.status, 200);
    });

    it("refuses a bound token sent as Bearer, in x-session-token, or without its proof", async () => {
      const { key, token } = await boundAgent();
      const proof = await dpopProof(key, {
        method: "GET",
        url: `${PUBLIC_URL}/api/notes`,
        accessToken: token,
      });
      const sent: Record<string, string>[] = [
        { authorization: `Bearer ${token}` },
        // A proof goes with the DPoP scheme only: as Bearer the token has none.
        { authorization: `Bearer ${token}`, dpop: proof },
        { "x-session-token": token, dpop: proof },
        { authorization: `DPoP ${token}` },
      ];
      for (const headers of sent) {
        const answer = await send("GET", "/api/notes", headers);
        await expectRefusal(
          answer,
          "session_token_proof_required",
          BOUND,
          Object.keys(headers).join(" "),
        );
      }
    });

    it("refuses a proof of another method, another URL, another token, or another key", async () => {
      const { key, token } = await boundAgent();
      const other = await boundAgent();
      const url = `${PUBLIC_URL}/api/notes`;
      const cases: [string, Promise<string>, string][] = [
        [
          "method",
          dpopProof(key, { method: "POST", url, accessToken: token }),
          "The DPoP proof's htm is not this method",
        ],
        [
          "path",
          dpopProof(key, { method: "GET", url: `${PUBLIC_URL}/api/tags`, accessToken: token }),
          "The DPoP proof's htu is not this URL",
        ],
        [
          // The URL its Host (and a proxy's headers) name: the notes API takes PUBLIC_URL's.
          "host",
          dpopProof(key, { method: "GET", url: `${ELSEWHERE}/api/notes`, accessToken: token }),
          "The DPoP proof's htu is not this URL",
        ],
        [
          "token",
          dpopProof(key, { method: "GET", url, accessToken: other.token }),
          "The DPoP proof's ath is not this access token's",
        ],
        [
          "key",
          dpopProof(other.key, { method: "GET", url, accessToken: token }),
          "The DPoP proof is signed by another key than the token's",
        ],
      ];
      for (const [what, proof, check] of cases) {
        const answer = await send("GET", "/api/notes", {
          authorization: `DPoP ${token}`,
          dpop: await proof,
          host: new URL(ELSEWHERE).host,
          "x-forwarded-host": new URL(ELSEWHERE).host,
          "x-forwarded-proto": "http",
        });
        const error = `Invalid DPoP proof: ${check}`;
        await expectRefusal(answer, "session_token_proof_invalid", error, `another ${what}`);
      }
      // The token itself is fine: with a proof of this request it is served.
      assert.equal((await callWithProof(key, token, "GET", "/api/notes")).status, 200);
    });

    it("refuses a proof used once already", async () => {
      const { key, token } = await boundAgent();
      const headers = await dpopHeaders(key, token, "GET", `${PUBLIC_URL}/api/notes`);
      assert.equal((await send("GET", "/api/notes", headers)).status, 200);
      await expectRefusal(
        await send("GET", "/api/notes", headers),
        "session_token_proof_invalid",
        "Invalid DPoP proof: The DPoP proof was used already (its jti)",
      );
    });

    it("refuses a proof too long for AgentPass to read, without asking it", async () => {
      const { token } = await boundAgent();
      const answer = await send("GET", "/api/notes", {
        authorization: `DPoP ${token}`,
        dpop: "x".repeat(9000),
      });
      await expectRefusal(
        answer,
        "session_token_proof_invalid",
        "Invalid DPoP proof: The DPoP proof is too long",
      );
    });

    it("serves an unbound token under the DPoP scheme, with or without a proof", async () => {
      const person = await notes.person();
      const key = await createDpopKey();
      assert.equal(
        (await send("GET", "/api/notes", { authorization: `DPoP ${person.token}` })).status,
        200,
      );
      assert.equal((await callWithProof(key, person.token, "GET", "/api/notes")).status, 200);
    });

    it("refuses two different tokens in Authorization: DPoP and x-session-token", async () => {
      const { key, token } = await boundAgent();
      const other = await notes.person();
      const headers = await dpopHeaders(key, token, "GET", `${PUBLIC_URL}/api/notes`);
      const answer = await send("GET", "/api/notes", {
        ...headers,
        "x-session-token": other.token,
      });
      assert.equal(answer.status, 400);
      assert.equal(((await answer.json()) as { code: string }).code, "invalid_request");
    });

    it("advertises the proof algorithms AgentPass accepts, and takes Bearer tokens too", async () => {
      const server = await fetch(`${notes.identity.url}/.well-known/oauth-authorization-server`);
      const { dpop_signing_alg_values_supported: accepted } = (await server.json()) as {
        dpop_signing_alg_values_supported: string[];
      };
      for (const path of ["", "/mcp"]) {
        const answer = await notes.app.request(`/.well-known/oauth-protected-resource${path}`);
        const document = (await answer.json()) as Record<string, unknown>;
        assert.deepEqual(document.dpop_signing_alg_values_supported, accepted);
        assert.equal(document.dpop_bound_access_tokens_required, false);
      }
    });
  });
}
