import type { Verifier } from "@agentpass/verify";
import type { LRUCache } from "lru-cache";
import type { NotesStore } from "./store/store.ts";

/** What the notes endpoints run against, passed in rather than imported. */
export interface NotesContext {
  store: NotesStore;
  verifier: Verifier;
  /** Epoch milliseconds; injected so `updatedAt` is tested exactly. */
  clock: () => number;
  /** Addresses AgentPass vouched for, in canonical form (false: none), bounded. */
  canonicalEmails: LRUCache<string, string | false>;
  /** Logs why an answer was 503 `Identity service unavailable` (`unavailable-log.ts`). */
  reportUnavailable: (reason: string) => void;
}
