import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { openTestNotes, type Person, type TestNotes } from "./support/harness.ts";

/** Generated requests: 20,000 in CI, more with FUZZ_RUNS (npm run test:stress). */
const RUNS = Number(process.env.FUZZ_RUNS ?? 20_000);

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
    "%00",
    "\u0000",
    "\ud800",
    "' OR 1=1 --",
    "%' OR '1'='1",
    "_%\\",
    "<script>alert(1)</script>",
    "x".repeat(12_000),
    "00000000-0000-0000-0000-000000000000",
    "-1",
    "1e309",
    "NaN",
  ),
);

describe("notes API under generated hostile requests", () => {
  let notes: TestNotes;
  let alice: Person;
  let bob: Person;
  let bobNoteId = "";

  before(async () => {
    // Thousands of bad tokens in a frozen minute: far past what a partner key may fail.
    notes = await openTestNotes("sqlite", { FAILED_VERIFIES_PER_MINUTE: "1000000000" });
    alice = await notes.person();
    bob = await notes.person();
    const created = await bob.call("POST", "/api/notes", {
      title: "Bob's secret plan",
      content: [],
    });
    bobNoteId = ((await created.json()) as { note: { id: string } }).note.id;
  });
  after(() => notes.close());

  it(`answers ${RUNS} generated requests without a 5xx, a crash or another user's data`, async () => {
    const id = fc.oneof(fc.constant(bobNoteId), fc.uuid(), hostile.map(encode));
    const path = fc.oneof(
      fc.constantFrom(
        "/api/notes",
        "/api/tags",
        "/api",
        "/api/openapi.json",
        "/docs",
        "/healthz",
        "/readyz",
        "/api/nope",
      ),
      id.map((value) => `/api/notes/${value}`),
      id.map((value) => `/api/tags/${value}`),
      fc
        .record(
          { search: hostile, tagId: id, limit: hostile, offset: hostile },
          { requiredKeys: [] },
        )
        .map((query) => `/api/notes?${new URLSearchParams(query as Record<string, string>)}`),
    );
    const field = fc.oneof(hostile, fc.jsonValue());
    const body = fc.oneof(
      fc.constant(undefined),
      fc.jsonValue().map((value) => JSON.stringify(value)),
      fc
        .record(
          {
            title: field,
            content: fc.oneof(
              field,
              fc.array(fc.record({ type: field, text: field }, { requiredKeys: [] }), {
                maxLength: 5,
              }),
            ),
            tagIds: fc.oneof(field, fc.array(id, { maxLength: 5 })),
            name: field,
            color: field,
          },
          { requiredKeys: [] },
        )
        .map((value) => JSON.stringify(value)),
      fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
      fc
        .integer({ min: 1, max: 50_000 })
        .map((depth) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`),
      fc.constant(JSON.stringify({ title: "t", content: "x".repeat(1_100_000) })),
    );
    const request = fc.record({
      method: fc.constantFrom("GET", "POST", "PATCH", "DELETE", "PUT", "HEAD"),
      path,
      token: fc.oneof(
        fc.constant(alice.token),
        fc.constant(undefined),
        hostile.map((v) => v.replace(/[^\x20-\x7e]/g, "")),
      ),
      contentType: fc.constantFrom(
        undefined,
        "application/json",
        "text/plain",
        "application/x-www-form-urlencoded",
      ),
      body,
    });

    let sent = 0;
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const headers = new Headers();
        if (r.token !== undefined) headers.set("x-session-token", r.token);
        if (r.contentType) headers.set("content-type", r.contentType);
        const hasBody = r.body !== undefined && r.method !== "GET" && r.method !== "HEAD";
        const response = await notes.app.request(`http://localhost${r.path}`, {
          method: r.method,
          headers,
          body: hasBody ? r.body : undefined,
        });
        sent++;
        assert.ok(response.status < 500, `${r.method} ${r.path} answered ${response.status}`);
        const text = await response.text();
        assert.ok(
          !text.includes("Bob's secret plan"),
          `${r.method} ${r.path} leaked another user's note`,
        );
        assert.ok(!text.includes(alice.token) || r.path === "/docs", "the token was echoed");
        if (r.path.startsWith("/api") && r.method !== "HEAD" && response.status >= 400) {
          assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
          assert.equal(typeof (JSON.parse(text) as { error: unknown }).error, "string");
        }
      }),
      { numRuns: RUNS },
    );
    assert.equal(sent, RUNS);
    // Bob's note survived whatever Alice's generated requests tried.
    const still = await bob.call("GET", `/api/notes/${bobNoteId}`);
    assert.equal(still.status, 200);
  });
});
