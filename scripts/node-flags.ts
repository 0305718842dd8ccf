/**
 * The V8 flags each service runs with in production, as the production commands of docs/operations.md give
 * them; the benchmarks and the cluster test run the services with the same (docs/decisions.md,
 * "Memory flags for the services"):
 * - both: the old generation may grow to 1.3 times what the last full collection kept, where V8
 *   picks up to 4 times under a high allocation rate, so the resident memory does not follow the
 *   machine's speed;
 * - the identity service: semi-spaces of at most 4 MB, which keep its young generation small; its
 *   requests end within a scavenge or two;
 * - the notes API: semi-spaces of at most 32 MB. Its searches wait tens of milliseconds for a
 *   reader thread under load, and with 4 MB semi-spaces every request outlived two scavenges and
 *   was promoted, filling the old generation and marking it several times a second.
 */
export const NODE_FLAGS = {
  identity: ["--max-semi-space-size=4", "--heap-growing-percent=30"],
  notes: ["--max-semi-space-size=32", "--heap-growing-percent=30"],
} as const satisfies Record<string, readonly string[]>;
