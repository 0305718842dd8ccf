import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { typeErrorsIn } from "@agentpass/db/testing";
import { createReadCaches } from "../src/index.ts";

describe("createReadCaches", () => {
  it("counts the reads its caches served from memory and those it read", async () => {
    let changed: boolean = false;
    const caches = createReadCaches(() => changed);
    const read = caches.cached(async (key: string) => ({ key }));
    const checked = await caches.beginRequest();
    await read(checked, "a");
    await read(checked, "a");
    await read(checked, "b");
    assert.deepEqual({ ...caches.lookups }, { hits: 1, misses: 2 });
    changed = true;
    await read(await caches.beginRequest(), "a");
    assert.deepEqual({ ...caches.lookups }, { hits: 1, misses: 3 }, "a change empties the cache");
  });
});

describe("HotRead", () => {
  it("refuses to compile a cached read without the HotRead its request's check resolved to", () => {
    const source = [
      `import { createReadCaches } from "@agentpass/db";`,
      "const caches = createReadCaches(() => false);",
      "const read = caches.cached(async (key: string) => ({ key }));",
      `export const checked = async () => read(await caches.beginRequest(), "a");`,
      `export const unchecked = () => read("a");`,
      `export const forged = () => read({}, "a");`,
    ].join("\n");
    const errors = typeErrorsIn("packages/db/src/compile-check.ts", source);
    assert.equal(errors.length, 2, errors.join("\n"));
    assert.match(errors[0] ?? "", /^5: TS2554: Expected 2 arguments, but got 1/);
    assert.match(
      errors[1] ?? "",
      /^6: TS2345: Argument of type '\{\}' is not assignable to parameter of type 'HotRead'/,
    );
  });
});
