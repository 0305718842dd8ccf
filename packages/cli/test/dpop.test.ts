import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import {
  createTestDatabase,
  freePort,
  type TestDatabase,
  testEngines,
} from "@agentpass/db/testing";
import { startTestIdentityService, type TestIdentityService } from "@agentpass/identity/testing";
import {
  calculateJwkThumbprint,
  decodeJwt,
  decodeProtectedHeader,
  importJWK,
  type JWK,
  jwtVerify,
} from "jose";
import { cliRunner, type Run } from "./support/run-cli.ts";

/** The two lines of `agentpass headers`, taken apart; fails unless it printed exactly those. */
function headerLines(result: Run): { token: string; proof: string } {
  assert.equal(result.code, 0, result.stderr);
  const lines = /^Authorization: DPoP (aps_[\w-]+)\nDPoP: ([\w-]+\.[\w-]+\.[\w-]+)\n$/.exec(
    result.stdout,
  );
  assert.ok(lines, result.stdout);
  return { token: lines[1] as string, proof: lines[2] as string };
}

/** `ath`: base64url of the SHA-256 of the token (RFC 9449 section 4.2). */
const hashOf = (token: string) => createHash("sha256").update(token).digest("base64url");

for (const engine of testEngines()) {
  describe(`agentpass token --dpop and agentpass headers, with a login's DPoP key (${engine})`, () => {
    let database: TestDatabase;
    let identity: TestIdentityService;
    let home: string;
    let userKey: { id: string; key: string };
    const secrets: string[] = [];
    const run = cliRunner({ home: () => home, url: () => identity.url, secrets });
    const credentialsFile = () => join(home, ".config", "agentpass", "credentials.json");
    const savedProfile = () => JSON.parse(readFileSync(credentialsFile(), "utf8"))[identity.url];
    /** The saved private JWK, whose `d` no output may hold from now on. */
    const savedDpopKey = (): JWK => {
      const { dpopKey } = savedProfile();
      if (typeof dpopKey?.d === "string") secrets.push(dpopKey.d);
      return dpopKey;
    };
    const publicPart = ({ kty, crv, x, y }: JWK): JWK => ({ kty, crv, x, y });
    const login = async () => {
      const result = await run(["login", "--with-key"], `${userKey.key}\n`);
      assert.equal(result.code, 0, result.stderr);
      return result;
    };
    const partnerKey = async () => {
      const partner = await identity.createPartner({ name: "P", ownerEmail: "p@example.com" });
      return { partnerId: partner.id, key: (await identity.createPartnerKey(partner.id)).key };
    };
    /** Introspection by a partner: by default one that is no token's audience. */
    const introspect = async (token: string, key?: string) => {
      key ??= (await partnerKey()).key;
      const response = await fetch(`${identity.url}/oauth/introspect`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: new URLSearchParams({ token }),
      });
      return (await response.json()) as { active: boolean; cnf?: { jkt: string } };
    };

    before(async () => {
      database = await createTestDatabase(engine);
      // PUBLIC_URL is the address the CLI calls: the proofs it sends AgentPass name it (htu).
      const port = await freePort();
      identity = await startTestIdentityService({
        databaseUrl: database.databaseUrl,
        port,
        env: { PUBLIC_URL: `http://127.0.0.1:${port}` },
      });
    });
    after(async () => {
      await identity.close();
      await database.drop();
    });
    beforeEach(async () => {
      home = mkdtempSync(join(tmpdir(), "agentpass-cli-dpop-"));
      userKey = await identity.createUserKey("Agent.Owner@example.com");
      secrets.push(userKey.key);
    });

    it("login saves a P-256 private key in the login's profile, a 0600 file, and prints none of it", async () => {
      const result = await login();
      const dpopKey = savedDpopKey();
      assert.deepEqual(Object.keys(dpopKey).sort(), ["crv", "d", "kty", "x", "y"]);
      assert.deepEqual([dpopKey.kty, dpopKey.crv], ["EC", "P-256"]);
      assert.equal(statSync(credentialsFile()).mode & 0o777, 0o600);
      assert.ok(!`${result.stdout}${result.stderr}`.includes(dpopKey.d as string));
      // A proof's header carries the public half only.
      const { proof } = headerLines(await run(["headers", "GET", "https://partner.example/a"]));
      assert.deepEqual(decodeProtectedHeader(proof).jwk, publicPart(dpopKey));
      assert.equal((await run(["token", "--dpop", "--json"])).code, 0);
      assert.equal((await run(["status"])).code, 0);
    });

    it("token --dpop is bound to the saved key (introspection's cnf.jkt is its thumbprint); token is not", async () => {
      await login();
      const jkt = await calculateJwkThumbprint(publicPart(savedDpopKey()), "sha256");
      const bound = await run(["token", "--dpop"]);
      assert.equal(bound.code, 0, bound.stderr);
      assert.match(bound.stdout, /^aps_[\w-]+\n$/);
      const introspected = await introspect(bound.stdout.trim());
      assert.equal(introspected.active, true);
      assert.deepEqual(introspected.cnf, { jkt });

      const plain = await run(["token"]);
      assert.notEqual(plain.stdout, bound.stdout, "cached apart from bound tokens");
      const unbound = await introspect(plain.stdout.trim());
      assert.equal(unbound.active, true);
      assert.equal(unbound.cnf, undefined);

      assert.equal((await run(["token", "--dpop"])).stdout, bound.stdout, "reused from the cache");
      const json = JSON.parse((await run(["token", "--dpop", "--json"])).stdout);
      assert.deepEqual(json, { ...json, sessionToken: bound.stdout.trim(), tokenType: "DPoP" });
      const fresh = (await run(["token", "--dpop", "--fresh"])).stdout.trim();
      assert.notEqual(fresh, bound.stdout.trim());
      assert.deepEqual((await introspect(fresh)).cnf, { jkt });
    });

    it("token --dpop --audience mints through POST /api/session-tokens, bound to the key and the partner", async () => {
      await login();
      const jkt = await calculateJwkThumbprint(publicPart(savedDpopKey()), "sha256");
      const partner = await partnerKey();
      const minted = await run(["token", "--dpop", "--json", "--audience", partner.partnerId]);
      assert.equal(minted.code, 0, minted.stderr);
      const { sessionToken, tokenType } = JSON.parse(minted.stdout);
      assert.equal(tokenType, "DPoP");
      assert.deepEqual((await introspect(sessionToken, partner.key)).cnf, { jkt });
      assert.equal((await introspect(sessionToken)).active, false, "another partner's");
    });

    it("headers prints the token and a proof by the saved key for that method, URL and token", async () => {
      await login();
      const publicKey = await importJWK(publicPart(savedDpopKey()), "ES256");
      const url = "https://partner.example/api/notes?search=kube#top";
      const first = headerLines(await run(["headers", "post", url]));
      const { payload, protectedHeader } = await jwtVerify(first.proof, publicKey, {
        typ: "dpop+jwt",
        algorithms: ["ES256"],
      });
      assert.equal(protectedHeader.alg, "ES256");
      assert.deepEqual(
        [payload.htm, payload.htu, payload.ath],
        ["POST", "https://partner.example/api/notes", hashOf(first.token)],
      );
      assert.equal(typeof payload.iat, "number");
      assert.ok(typeof payload.jti === "string" && payload.jti.length >= 16);
      assert.equal(payload.nonce, undefined);

      const second = headerLines(await run(["headers", "GET", url]));
      assert.equal(second.token, first.token, "the cached bound token");
      assert.equal((await run(["token", "--dpop"])).stdout.trim(), first.token);
      const again = decodeJwt(second.proof);
      assert.equal(again.htm, "GET");
      assert.notEqual(again.jti, payload.jti, "a fresh proof each time");
    });

    it("a malformed method or URL is a usage error (exit 2), with nothing printed on stdout", async () => {
      await login();
      for (const args of [
        ["GET"],
        ["GET", "https://partner.example/a", "extra"],
        ["GE T", "https://partner.example/a"],
        ["GET\nX-Evil: 1", "https://partner.example/a"],
        ["GET", "partner.example/a"],
        ["GET", "ftp://partner.example/a"],
      ]) {
        const result = await run(["headers", ...args]);
        assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
        assert.equal(result.stdout, "");
        assert.match(result.stderr, /^agentpass: (Give a method and a URL|Not an)/);
      }
    });

    it("gives a login saved before DPoP keys its key on first use, and keeps it", async () => {
      mkdirSync(join(home, ".config", "agentpass"), { recursive: true, mode: 0o700 });
      writeFileSync(
        credentialsFile(),
        JSON.stringify({ [identity.url]: { key: userKey.key, savedAt: new Date().toISOString() } }),
        { mode: 0o600 },
      );
      headerLines(await run(["headers", "GET", "https://partner.example/a"]));
      const made = savedDpopKey();
      assert.equal(typeof made.d, "string");
      assert.equal(savedProfile().key, userKey.key);
      assert.equal(statSync(credentialsFile()).mode & 0o777, 0o600);
      assert.equal((await run(["token", "--dpop"])).code, 0);
      assert.deepEqual(savedDpopKey(), made);
    });

    it("logout forgets the DPoP key with the user key", async () => {
      await login();
      savedDpopKey();
      assert.equal((await run(["logout", "--local"])).code, 0);
      assert.equal(readFileSync(credentialsFile(), "utf8").trim(), "{}");
    });

    it("POST /api/verify takes the token with the proof of headers once, and refuses it again or without it", async () => {
      await login();
      savedDpopKey();
      const partner = await partnerKey();
      const verify = async (body: unknown) => {
        const response = await fetch(`${identity.url}/api/verify`, {
          method: "POST",
          headers: { authorization: `Bearer ${partner.key}` },
          body: JSON.stringify(body),
        });
        return { status: response.status, body: await response.json() };
      };
      for (const audience of [[], ["--audience", partner.partnerId]]) {
        const url = "https://partner.example/api/orders";
        const { token, proof } = headerLines(await run(["headers", "POST", url, ...audience]));
        const dpop = { proof, method: "POST", url: `${url}?page=2` };
        assert.deepEqual(await verify({ sessionToken: token, dpop }), {
          status: 200,
          body: { email: "agent.owner@example.com" },
        });
        const replayed = await verify({ sessionToken: token, dpop });
        assert.equal(replayed.status, 401);
        assert.equal(replayed.body.code, "session_token_proof_invalid");
        assert.match(replayed.body.error, /used already/);
        const alone = await verify({ sessionToken: token });
        assert.equal(alone.status, 401);
        assert.equal(alone.body.code, "session_token_proof_required");
      }
    });
  });
}

describe("agentpass token --dpop against a token endpoint that misbehaves", () => {
  let server: Server;
  let url: string;
  let home: string;
  /** What the endpoint answers; each request's DPoP proof is kept in `proofs`. */
  let answer: (request: IncomingMessage) => { status: number; headers: object; body: object };
  const proofs: string[] = [];
  const run = cliRunner({ home: () => home, url: () => url, secrets: [] });

  before(async () => {
    server = createServer((request, response) => {
      proofs.push(String(request.headers.dpop));
      const { status, headers, body } = answer(request);
      response.writeHead(status, { "content-type": "application/json", ...headers });
      response.end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    proofs.length = 0;
    home = mkdtempSync(join(tmpdir(), "agentpass-cli-dpop-"));
    mkdirSync(join(home, ".config", "agentpass"), { recursive: true, mode: 0o700 });
    const key = `apu_${"a".repeat(38)}`;
    writeFileSync(
      join(home, ".config", "agentpass", "credentials.json"),
      JSON.stringify({ [url]: { key, savedAt: new Date().toISOString() } }),
      { mode: 0o600 },
    );
  });

  it("retries once with the nonce it was given, and never again", async () => {
    let nonces = 0;
    answer = () => ({
      status: 400,
      headers: { "dpop-nonce": `nonce-${++nonces}` },
      body: { error: "use_dpop_nonce", error_description: "Send this nonce" },
    });
    const result = await run(["token", "--dpop"]);
    assert.equal(result.code, 1);
    assert.equal(result.stdout, "");
    assert.match(result.stderr, /refused this login's DPoP proof \(Send this nonce\)/);
    assert.equal(proofs.length, 2);
    assert.deepEqual(
      proofs.map((proof) => decodeJwt(proof).nonce),
      [undefined, "nonce-1"],
    );
  });

  it("refuses a token the server did not bind, rather than print it as a bound one", async () => {
    answer = () => ({
      status: 200,
      headers: {},
      body: { access_token: "aps_unbound", token_type: "Bearer", expires_in: 300 },
    });
    const result = await run(["headers", "GET", "https://partner.example/a"]);
    assert.equal(result.code, 1);
    assert.equal(result.stdout, "");
    assert.match(result.stderr, /did not bind the token to this login's key/);
  });
});
