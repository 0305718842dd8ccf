import type { Verifier } from "@agentpass/verify";
import type { NotesStore, User } from "./store/store.ts";

/** What the notes routes run against, passed in rather than imported. */
export interface NotesContext {
  store: NotesStore;
  verifier: Verifier;
  /** Epoch milliseconds; injected so `updatedAt` is tested exactly. */
  clock: () => number;
}

/** Variables the authentication middleware sets for the routes after it. */
export type NotesEnv = { Variables: { user: User } };
