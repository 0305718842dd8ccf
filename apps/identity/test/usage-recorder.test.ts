import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import type { UsageBatch } from "../src/store/usage-store.ts";
import { createUsageRecorder } from "../src/usage-recorder.ts";

/** A recorder whose flushed batches are kept, to read what it counted. */
function recorder() {
  const batches: UsageBatch[] = [];
  const usage = createUsageRecorder(
    {
      addUsage: async (batch: UsageBatch) => {
        batches.push(batch);
      },
    } as Parameters<typeof createUsageRecorder>[0],
    (error) => {
      throw error;
    },
  );
  return { usage, batches };
}

describe("usage recorder", () => {
  it("counts each verification under the UTC day it happened, across midnight and back", async () => {
    const { usage, batches } = recorder();
    const midnight = Date.UTC(2026, 10, 24);
    usage.record("p", "success", midnight - 1);
    usage.record("p", "success", midnight);
    usage.record("p", "success", midnight + 1);
    usage.record("p", "invalid_token", midnight - 86_400_000 - 1);
    usage.record("p", "success", midnight - 2);
    await usage.close();
    assert.deepEqual(Object.fromEntries(batches[0]?.daily ?? []), {
      "p|2026-11-23|success": 2,
      "p|2026-11-24|success": 2,
      "p|2026-11-22|invalid_token": 1,
    });
  });

  it("files any time under the day Date#toISOString gives it", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: Date.UTC(9999, 11, 31) }), { minLength: 1 }),
        async (times) => {
          const { usage, batches } = recorder();
          for (const at of times) usage.record("p", "success", at);
          await usage.close();
          const expected = new Map<string, number>();
          for (const at of times) {
            const key = `p|${new Date(at).toISOString().slice(0, 10)}|success`;
            expected.set(key, (expected.get(key) ?? 0) + 1);
          }
          assert.deepEqual(batches[0]?.daily, expected);
        },
      ),
    );
  });
});
