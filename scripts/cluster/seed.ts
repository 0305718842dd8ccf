import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../apps/identity/src/config.ts";
import { createAccount } from "../../apps/identity/src/domain/accounts.ts";
import { issueKey } from "../../apps/identity/src/domain/credentials.ts";
import type { KeyKind } from "../../apps/identity/src/domain/keys.ts";
import { createPartner } from "../../apps/identity/src/domain/partners.ts";
import { startWebSession } from "../../apps/identity/src/domain/web-sessions.ts";
import { createLogger } from "../../apps/identity/src/infra/logger.ts";
import { openIdentityService } from "../../apps/identity/src/service.ts";
import { loadNotesConfig } from "../../apps/notes/src/config.ts";
import { openNotesService } from "../../apps/notes/src/service.ts";

/** The user keys the cluster test spends, one per purpose, so no test eats another's budget. */
const USER_KEYS = [
  "steady",
  "revokedUnderLoad",
  "sharedLimit",
  "redisStalled",
  "redisStopped",
  "databaseFaults",
  "notes",
] as const;

interface SeededKey {
  id: string;
  key: string;
}

/** What the seeding made, printed as one JSON object on stdout. */
export interface Seed {
  email: string;
  userKeys: Record<(typeof USER_KEYS)[number], SeededKey>;
  /** Keys of a partner that verifies through haproxy: one kept, one revoked under load. */
  partnerKeys: { steady: SeededKey; revokedUnderLoad: SeededKey };
  /** The notes API's own partner key (AGENTPASS_PARTNER_KEY of every notes instance). */
  notesPartnerKey: SeededKey;
  /** A dashboard session of the account (the `agentpass_session` cookie). */
  webSession: string;
}

/**
 * Seeds the cluster's two databases once, before any instance starts: migrates both, makes the
 * sealing key (wrapped under AGENTPASS_SECRET, as every instance will read it), one account with
 * its user keys and a dashboard session, a partner with two keys, the notes API as a partner,
 * and the account's user in the notes API. Through the domain functions, as the admin CLI does.
 *
 * Environment: DATABASE_URL (identity), NOTES_DATABASE_URL, AGENTPASS_SECRET, NOTES_PUBLIC_URL.
 */
async function seed(env: Record<string, string | undefined>): Promise<Seed> {
  const dataDir = mkdtempSync(join(tmpdir(), "agentpass-cluster-seed-"));
  const email = "cluster@example.com";
  try {
    const identityConfig = loadConfig({
      DATABASE_URL: env.DATABASE_URL,
      AGENTPASS_SECRET: env.AGENTPASS_SECRET,
      DATA_DIR: dataDir,
      DATABASE_POOL_SIZE: "2",
    });
    if (!identityConfig.ok) throw new Error(identityConfig.error);
    const identity = await openIdentityService(identityConfig.config, {
      logger: createLogger("warn", "stderr"),
    });
    let seeded: Seed;
    try {
      const { ctx } = identity;
      const account = await createAccount(ctx, email);
      if (!account.ok) throw new Error(`account: ${account.code}`);
      const issue = async (kind: KeyKind, ownerId: string, name: string) => {
        const issued = await issueKey(ctx, kind, ownerId, name);
        if (!issued.ok) throw new Error(`key ${name}: ${issued.code}`);
        return { id: issued.record.id, key: issued.key };
      };
      const partner = await createPartner(ctx, {
        ownerAccountId: account.account.id,
        name: "Cluster partner",
      });
      const notesPartner = await createPartner(ctx, {
        ownerAccountId: account.account.id,
        name: "Notes",
        website: env.NOTES_PUBLIC_URL,
      });
      if (!partner.ok || !notesPartner.ok) throw new Error("partners could not be created");
      const userKeys = {} as Seed["userKeys"];
      for (const name of USER_KEYS) userKeys[name] = await issue("user", account.account.id, name);
      seeded = {
        email,
        userKeys,
        partnerKeys: {
          steady: await issue("partner", partner.partner.id, "steady"),
          revokedUnderLoad: await issue("partner", partner.partner.id, "revoked under load"),
        },
        notesPartnerKey: await issue("partner", notesPartner.partner.id, "notes API"),
        webSession: await startWebSession(ctx, account.account.id),
      };
    } finally {
      await identity.close();
    }

    const notesConfig = loadNotesConfig({
      DATABASE_URL: env.NOTES_DATABASE_URL,
      DATA_DIR: dataDir,
      DATABASE_POOL_SIZE: "2",
      LOG_LEVEL: "warn",
    });
    if (!notesConfig.ok) throw new Error(notesConfig.error);
    // Logs go to stderr: stdout is the seed's answer.
    const notes = await openNotesService(notesConfig.config, {
      logger: createLogger("error", "stderr"),
    });
    try {
      if (!(await notes.ctx.store.addUser(email, Date.now()))) throw new Error("notes user");
    } finally {
      await notes.close();
    }
    return seeded;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  seed(process.env).then(
    (seeded) => console.log(JSON.stringify(seeded)),
    (error: unknown) => {
      console.error(`seed: ${error instanceof Error ? error.stack : String(error)}`);
      process.exit(1);
    },
  );
}
