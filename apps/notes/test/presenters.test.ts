import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { presentNote, presentTag } from "../src/presenters.ts";
import type { Note } from "../src/store/store.ts";

const RUNS = Number(process.env.PROPERTY_RUNS ?? 2_000);

/** Any text, lone surrogates and control characters included. */
const text = fc.string({ unit: "binary", maxLength: 40 });
/** Instants in four-digit years mostly, and some that `toISOString` writes in other forms. */
const instant = fc.oneof(
  fc.integer({ min: 0, max: Date.UTC(2100, 0) }),
  fc.integer({ min: -8.64e15, max: 8.64e15 }),
);
const tag = fc.record({ id: text, name: text, createdAt: instant });
const note = fc.record({
  id: text,
  title: text,
  content: fc.jsonValue(),
  contentText: text,
  createdAt: instant,
  updatedAt: instant,
  tags: fc.array(tag, { maxLength: 3 }),
  agent: fc.option(fc.record({ id: text, name: text }), { nil: null }),
});

const iso = (ms: number) => new Date(ms).toISOString();

describe("presentNote", () => {
  it("gives any note's fields as they are, times as ISO 8601 UTC with milliseconds, tags in their order", () => {
    fc.assert(
      fc.property(note, (n) => {
        const presented = presentNote(n);
        assert.deepEqual(presented, {
          id: n.id,
          title: n.title,
          content: n.content,
          contentText: n.contentText,
          createdAt: iso(n.createdAt),
          updatedAt: iso(n.updatedAt),
          tags: n.tags.map((t) => ({ id: t.id, name: t.name, createdAt: iso(t.createdAt) })),
          ...(n.agent && { agent: n.agent }),
        });
        assert.deepEqual(Object.keys(presented), [
          "id",
          "title",
          "content",
          "contentText",
          "createdAt",
          "updatedAt",
          "tags",
          ...(n.agent ? ["agent"] : []),
        ]);
        for (const [index, t] of n.tags.entries()) {
          assert.deepEqual(presented.tags[index], presentTag(t));
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("hands a hostile document through as the request's JSON.parse gave it", () => {
    const hostile = '\u0001\u001f\u007f"\\</script>\u2028\u2029\ud83d\ude00\ud800é\n\t';
    const json =
      '{"__proto__":{"x":1},"10":true,"b":[1e21,-0,0.1,1.7976931348623157e308,"\\u2028\\"\\\\"],"a":null}';
    const stored: Note = {
      id: hostile,
      title: hostile,
      content: JSON.parse(json),
      contentText: hostile,
      createdAt: -1,
      updatedAt: 253_402_300_800_000,
      tags: [{ id: "t1", name: hostile, createdAt: 1_764_000_000_123 }],
      agent: null,
    };
    const answer = JSON.parse(JSON.stringify(presentNote(stored)));
    assert.deepEqual(Object.keys(answer.content), ["10", "__proto__", "b", "a"]);
    assert.equal(JSON.stringify(answer.content), JSON.stringify(JSON.parse(json)));
    assert.equal(answer.title, hostile);
    assert.equal(answer.createdAt, "1969-12-31T23:59:59.999Z");
    assert.equal(answer.updatedAt, "+010000-01-01T00:00:00.000Z");
    assert.deepEqual(answer.tags, [
      { id: "t1", name: hostile, createdAt: "2025-11-24T16:00:00.123Z" },
    ]);
  });
});
