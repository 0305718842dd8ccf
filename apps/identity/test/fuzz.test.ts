import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

/** Generated requests: 30,000 in CI, more with FUZZ_RUNS (npm run test:stress). */
const RUNS = Number(process.env.FUZZ_RUNS ?? 30_000);

const PATHS = [
  "/api/verify",
  "/api/session-tokens",
  "/api/partners",
  "/api/device/code",
  "/api/device/token",
  "/api/openapi.json",
  "/docs",
  "/healthz",
  "/readyz",
  "/",
  "/sign-in",
  "/sign-in/code",
  "/sign-in/link",
  "/sign-out",
  "/sign-out-everywhere",
  "/keys",
  "/activity",
  "/partners",
  "/directory",
  "/account",
  "/account/delete",
  "/device",
  "/assets/style.css",
];

/** Percent-encodes like a client would; a lone surrogate (which cannot be) as its raw bytes. */
function encode(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return "%ED%A0%80";
  }
}

const hostile = fc.oneof(
  fc.string({ unit: "binary", maxLength: 60 }),
  fc.constantFrom(
    "../../etc/passwd",
    "%2e%2e%2f",
    "%00",
    "\u0000",
    "\ud800",
    "' OR 1=1 --",
    "<script>alert(1)</script>",
    "{{7*7}}",
    "x".repeat(5000),
    "00000000-0000-0000-0000-000000000000",
  ),
);

describe("identity service under generated hostile requests", () => {
  let identity: TestIdentity;
  let secrets: { partnerKey: string; userKey: string; token: string; partnerId: string };

  before(async () => {
    // Limits out of the way, so generated requests reach the checks behind them (the limits
    // have their own tests).
    identity = await openTestIdentity("sqlite", {
      MINTS_PER_MINUTE: "1000000000",
      FAILED_VERIFIES_PER_MINUTE: "1000000000",
      BAD_KEYS_PER_MINUTE: "1000000000",
    });
    const partner = await identity.partner({ listed: true });
    const user = await identity.userKey();
    secrets = {
      partnerKey: partner.key,
      partnerId: partner.id,
      userKey: user.key,
      token: await identity.token(user.key),
    };
  });
  after(() => identity.close());

  /** Credentials and bodies of every kind, the secrets among them. */
  function inputs() {
    const credential = fc.oneof(
      fc.constant(undefined),
      fc.constantFrom(
        `Bearer ${secrets.partnerKey}`,
        `Bearer ${secrets.userKey}`,
        `Bearer ${secrets.token}`,
        "Bearer",
        "Bearer ",
        "Basic YTpi",
        `bearer ${secrets.partnerKey}`,
      ),
      hostile.map((value) => `Bearer ${value}`),
    );
    const body = fc.oneof(
      fc.constant(undefined),
      fc.jsonValue().map((value) => JSON.stringify(value)),
      fc
        .record(
          {
            sessionToken: fc.oneof(fc.constant(secrets.token), fc.jsonValue()),
            audience: fc.jsonValue(),
            device_code: fc.jsonValue(),
            client_name: fc.jsonValue(),
          },
          { requiredKeys: [] },
        )
        .map((v) => JSON.stringify(v)),
      fc.string({ unit: "binary", maxLength: 200 }),
      fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
      fc.integer({ min: 1, max: 50_000 }).map((depth) => "[".repeat(depth) + "]".repeat(depth)),
      fc.constant(JSON.stringify({ sessionToken: "x".repeat(70_000) })),
      fc
        .record(
          {
            email: hostile,
            code: hostile,
            name: hostile,
            website: hostile,
            _csrf: hostile,
            link: hostile,
          },
          { requiredKeys: [] },
        )
        .map((fields) => new URLSearchParams(fields as Record<string, string>).toString()),
    );
    return { credential, body };
  }

  it(`answers ${RUNS} generated requests without a 5xx, a crash or an echoed secret`, async () => {
    const path = fc.oneof(
      fc.constantFrom(...PATHS),
      fc.tuple(fc.constantFrom(...PATHS), hostile).map(([p, extra]) => `${p}/${encode(extra)}`),
      fc
        .tuple(fc.constantFrom(...PATHS), hostile)
        .map(([p, extra]) => `${p}?next=${encode(extra)}&code=${encode(extra)}`),
      fc.constantFrom(
        "/keys/x/revoke",
        "/partners/x",
        "/partners/x/keys",
        "/partners/x/keys/y/revoke",
        "//api/verify",
        "/api/../api/verify",
        "/API/VERIFY",
      ),
    );
    const { credential, body } = inputs();
    const request = fc.record({
      method: fc.constantFrom("GET", "POST", "PATCH", "DELETE", "PUT", "OPTIONS", "HEAD"),
      path,
      credential,
      contentType: fc.constantFrom(
        undefined,
        "application/json",
        "application/x-www-form-urlencoded",
        "text/plain",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin1",
      ),
      cookie: fc.option(
        hostile.map((v) => `agentpass_session=${encode(v)}; agentpass_browser=${encode(v)}`),
      ),
      extraHeader: fc.option(
        fc.tuple(
          fc.constantFrom("x-session-token", "origin", "sec-fetch-site", "host", "content-length"),
          hostile.map((v) => v.replace(/[^\x20-\x7e]/g, "")),
        ),
      ),
      body,
    });

    const forbidden = [secrets.partnerKey, secrets.userKey, secrets.token];
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const headers = new Headers();
        if (r.credential) headers.set("authorization", r.credential.replace(/[^\x20-\x7e]/g, ""));
        if (r.contentType) headers.set("content-type", r.contentType);
        if (r.cookie) headers.set("cookie", r.cookie.replace(/[^\x20-\x7e]/g, ""));
        if (r.extraHeader && r.extraHeader[0] !== "content-length")
          headers.append(r.extraHeader[0], r.extraHeader[1]);
        const hasBody = r.body !== undefined && r.method !== "GET" && r.method !== "HEAD";
        const response = await identity.app.request(`http://localhost${r.path}`, {
          method: r.method,
          headers,
          body: hasBody ? r.body : undefined,
        });
        sent++;
        assert.ok(response.status < 500, `${r.method} ${r.path} answered ${response.status}`);
        const text = await response.text();
        for (const secret of forbidden)
          assert.ok(!text.includes(secret), `${r.method} ${r.path} echoed a secret`);
        if (r.path.startsWith("/api/") && r.method !== "HEAD" && response.status >= 400) {
          assert.match(
            response.headers.get("content-type") ?? "",
            /^application\/json/,
            `${r.method} ${r.path}`,
          );
          assert.equal(typeof (JSON.parse(text) as { error: unknown }).error, "string");
        }
      }),
      { numRuns: RUNS },
    );
    assert.equal(sent, RUNS);
    // Still serving afterwards.
    const verified = await identity.verify(
      `Bearer ${secrets.partnerKey}`,
      JSON.stringify({ sessionToken: secrets.token }),
    );
    assert.equal(verified.status, 200);
  });
});
