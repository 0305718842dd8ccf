import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { listedPageJson, listingPageJson, presentNote } from "../src/presenters.ts";
import { noteListing } from "../src/store/listing.ts";
import type { ListedNote, Note } from "../src/store/store.ts";

const RUNS = Number(process.env.PROPERTY_RUNS ?? 2_000);

/** Any text, lone surrogates and control characters included (JSON.stringify escapes them). */
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
});

/** A note as the list reads it: content as stored (`JSON.stringify`), tags as `[[id, name, createdAt], …]`. */
function listed(note: Note): ListedNote {
  const tags = note.tags.map((tag) => [tag.id, tag.name, tag.createdAt]);
  return [
    note.id,
    note.title,
    JSON.stringify(note.content),
    note.contentText,
    note.createdAt,
    note.updatedAt,
    tags.length === 0 ? null : JSON.stringify(tags),
  ];
}

describe("listedPageJson", () => {
  it("writes the same text as JSON.stringify of the presented page, for any notes", () => {
    fc.assert(
      fc.property(fc.array(note, { maxLength: 5 }), fc.nat(), (notes, total) => {
        // The content as a request's JSON.parse would hand it over (fc.jsonValue may hold -0).
        const stored = notes.map((n) => ({ ...n, content: JSON.parse(JSON.stringify(n.content)) }));
        const expected = JSON.stringify({ notes: stored.map(presentNote), total });
        assert.equal(listedPageJson({ notes: stored.map(listed), total }), expected);
        // The same page as its notes' stored listings (what a plain page reads).
        const listings = stored
          .map(listed)
          .map(
            ([id, title, content, contentText, createdAt, updatedAt, tags]) =>
              [noteListing(id, title, content, contentText, createdAt, updatedAt), tags, total] as [
                string,
                string | null,
                number,
              ],
          );
        assert.equal(listingPageJson({ notes: listings, total }), expected);
      }),
      { numRuns: RUNS },
    );
  });

  it("writes hostile strings, documents and tags as JSON.stringify does", () => {
    const hostile = '\u0001\u001f\u007f"\\</script>\u2028\u2029\ud83d\ude00\ud800é\n\t';
    const content = JSON.parse(
      '{"__proto__":{"x":1},"10":true,"b":[1e21,-0,0.1,1.7976931348623157e308,"\\u2028\\"\\\\"],"a":null}',
    );
    const page: Note[] = [
      {
        id: hostile,
        title: hostile,
        content,
        contentText: hostile,
        createdAt: -1,
        updatedAt: 253_402_300_800_000,
        tags: [
          { id: "t1", name: hostile, createdAt: 0 },
          { id: "t2", name: "", createdAt: 1_764_000_000_123 },
        ],
      },
      { ...emptyNote(), id: "n2" },
    ];
    const json = listedPageJson({ notes: page.map(listed), total: 2 });
    assert.equal(json, JSON.stringify({ notes: page.map(presentNote), total: 2 }));
    assert.deepEqual(Object.keys(JSON.parse(json).notes[0].content), ["10", "__proto__", "b", "a"]);
    assert.equal(listedPageJson({ notes: [], total: 7 }), '{"notes":[],"total":7}');
  });
});

function emptyNote(): Note {
  return {
    id: "",
    title: "",
    content: [],
    contentText: "",
    createdAt: 0,
    updatedAt: 0,
    tags: [],
  };
}
