import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { createUsageRecorder, type VerifyOutcome } from "../src/domain/usage-recorder.ts";
import type { UsageBatch } from "../src/store/usage-store.ts";

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

  it("counts every partner, outcome, day and account pair as built from scratch, flush after flush", async () => {
    const ids = ["p1", "p2", "a1", "a2"];
    const event = fc.record({
      partner: fc.constantFrom(...ids),
      outcome: fc.constantFrom<VerifyOutcome>(
        "success",
        "invalid_token",
        "revoked_partner_key",
        "proof_required",
        "proof_invalid",
        "proof_replayed",
        "proof_wrong_key",
      ),
      at: fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 0, 4) }),
      account: fc.option(fc.constantFrom(...ids), { nil: undefined }),
      flushAfter: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(event, { minLength: 1, maxLength: 40 }), async (events) => {
        const { usage, batches } = recorder();
        const expected: UsageBatch[] = [];
        let daily = new Map<string, number>();
        let activity: UsageBatch["activity"] = new Map();
        for (const { partner, outcome, at, account, flushAfter } of events) {
          usage.record(partner, outcome, at, account);
          const key = `${partner}|${new Date(at).toISOString().slice(0, 10)}|${outcome}`;
          daily.set(key, (daily.get(key) ?? 0) + 1);
          if (account) {
            const pair = `${account}|${partner}`;
            const seen = activity.get(pair);
            activity.set(pair, {
              first: seen?.first ?? at,
              last: at,
              count: (seen?.count ?? 0) + 1,
            });
          }
          if (flushAfter) {
            await usage.flush();
            expected.push({ daily, activity, agents: new Map() });
            daily = new Map();
            activity = new Map();
          }
        }
        await usage.close();
        if (daily.size > 0) expected.push({ daily, activity, agents: new Map() });
        assert.deepEqual(batches, expected);
      }),
    );
  });

  it("keeps a batch whose write failed and adds it to the next flush", async () => {
    const written: UsageBatch[] = [];
    let failNext = true;
    const usage = createUsageRecorder(
      {
        addUsage: async (batch: UsageBatch) => {
          if (failNext) {
            failNext = false;
            throw new Error("database down");
          }
          written.push(batch);
        },
      } as Parameters<typeof createUsageRecorder>[0],
      () => {},
    );
    const day = Date.UTC(2026, 10, 24);
    usage.record("p", "success", day + 1, "a");
    await assert.rejects(usage.flush(), /database down/);
    usage.record("p", "success", day + 5, "a");
    usage.record("p", "invalid_token", day + 6);
    await usage.close();
    assert.equal(written.length, 1);
    assert.deepEqual(Object.fromEntries(written[0]?.daily ?? []), {
      "p|2026-11-24|success": 2,
      "p|2026-11-24|invalid_token": 1,
    });
    assert.deepEqual(written[0]?.activity.get("a|p"), { first: day + 1, last: day + 5, count: 2 });
  });

  it("never runs two flushes at once: one asked for meanwhile waits, then writes what came since", async () => {
    let writing = 0;
    let overlapped = false;
    const release = Promise.withResolvers<void>();
    const written: UsageBatch[] = [];
    const usage = createUsageRecorder(
      {
        addUsage: async (batch: UsageBatch) => {
          writing++;
          if (writing > 1) overlapped = true;
          if (written.length === 0) await release.promise;
          written.push(batch);
          writing--;
        },
      } as Parameters<typeof createUsageRecorder>[0],
      () => {},
    );
    usage.record("p", "success", 1);
    const first = usage.flush();
    await new Promise((resolve) => setImmediate(resolve));
    usage.record("p", "invalid_token", 2);
    const second = usage.flush();
    await new Promise((resolve) => setImmediate(resolve));
    release.resolve();
    await Promise.all([first, second]);
    await usage.close();
    assert.equal(overlapped, false);
    assert.deepEqual(
      written.map((batch) => Object.fromEntries(batch.daily)),
      [{ "p|1970-01-01|success": 1 }, { "p|1970-01-01|invalid_token": 1 }],
    );
  });
});
