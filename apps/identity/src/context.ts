import type { Clock } from "./clock.ts";
import type { KeyUsageRecorder } from "./key-usage.ts";
import type { SealingKeyRing } from "./sealing-keys.ts";
import type { Store } from "./store/store.ts";
import type { UsageStore } from "./store/usage-store.ts";
import type { WebStore } from "./store/web-store.ts";
import type { UsageRecorder } from "./usage-recorder.ts";

/** What the domain functions run against, passed in rather than imported. */
export interface IdentityContext {
  store: Store;
  clock: Clock;
  sealingKeys: SealingKeyRing;
  keyUsage: KeyUsageRecorder;
  web: WebStore;
  usageStore: UsageStore;
  usage: UsageRecorder;
  sessionTokenTtlMs: number;
}
