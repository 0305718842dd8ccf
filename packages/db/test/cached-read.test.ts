import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createReadCaches } from "../src/index.ts";

describe("createReadCaches", () => {
  it("counts the reads its caches served from memory and those it read", async () => {
    let changed: boolean = false;
    const caches = createReadCaches(() => changed);
    const read = caches.cached(async (key: string) => ({ key }));
    await caches.beginRequest();
    await read("a");
    await read("a");
    await read("b");
    assert.deepEqual({ ...caches.lookups }, { hits: 1, misses: 2 });
    changed = true;
    await caches.beginRequest();
    await read("a");
    assert.deepEqual({ ...caches.lookups }, { hits: 1, misses: 3 }, "a change empties the cache");
  });
});
