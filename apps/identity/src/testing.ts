import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "@agentpass/http";
import { loadConfig } from "./config.ts";
import { createAccount, findAccountByEmail } from "./domain/accounts.ts";
import { issueKey, revokeKey } from "./domain/credentials.ts";
import { decideDeviceLogin, hashUserCode, normalizeUserCode } from "./domain/device-login.ts";
import { hashKey } from "./domain/keys.ts";
import { addPartnerResource } from "./domain/oauth.ts";
import { createPartner } from "./domain/partners.ts";
import { startWebSession } from "./domain/web-sessions.ts";
import { openIdentityService } from "./service.ts";

/**
 * The rate limits count in fixed windows of a minute on the clock (`now - now % 60 s`), and
 * tests that run on the real clock would see a count start again if a run of requests straddled
 * a window's end. Call this before such a run: it waits for the next window to begin when fewer
 * than `needMs` are left of the current one.
 */
export async function awaitRoomInRateWindow(needMs = 10_000): Promise<void> {
  const minute = 60_000;
  const left = minute - (Date.now() % minute);
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

/**
 * A real identity service on a real loopback port, on SQLite in a fresh temporary folder, for
 * the tests of the client library, the agent CLI and the notes API.
 *
 * @example
 * const identity = await startTestIdentityService();
 * const { key } = await identity.createUserKey("ada@example.com");
 * // ... call identity.url ...
 * await identity.close();
 */
export async function startTestIdentityService(
  options: {
    sessionTokenTtlSeconds?: number;
    databaseUrl?: string;
    clock?: () => number;
    /** More settings, as environment variables (e.g. MINTS_PER_MINUTE). */
    env?: Record<string, string>;
    /** The port to listen on (0: any free one), e.g. the port of a PUBLIC_URL chosen first. */
    port?: number;
  } = {},
) {
  const dataDir = mkdtempSync(join(tmpdir(), "agentpass-identity-"));
  const loaded = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: options.databaseUrl,
    SESSION_TOKEN_TTL_SECONDS: String(options.sessionTokenTtlSeconds ?? 300),
    LOG_LEVEL: "silent",
    ...options.env,
  });
  if (!loaded.ok) throw new Error(loaded.error);
  const service = await openIdentityService(loaded.config, { clock: options.clock });
  const server = await startServer(service, { port: options.port ?? 0, host: "127.0.0.1" });
  const { ctx } = service;

  async function accountFor(email: string) {
    const found = await findAccountByEmail(ctx, email);
    if (found.ok) return found.account;
    const created = await createAccount(ctx, email);
    if (!created.ok) throw new Error(`cannot create account ${email}: ${created.code}`);
    return created.account;
  }

  async function issue(kind: "user" | "partner", ownerId: string, name: string) {
    const issued = await issueKey(ctx, kind, ownerId, name);
    if (!issued.ok) throw new Error(`cannot issue key: ${issued.code}`);
    return { id: issued.record.id, key: issued.key };
  }

  return {
    url: server.url,
    service,
    async createAccount(email: string) {
      const account = await accountFor(email);
      return { id: account.id, email: account.email };
    },
    async createUserKey(email: string, name = "test") {
      return issue("user", (await accountFor(email)).id, name);
    },
    async createPartner(input: { name: string; ownerEmail: string; listed?: boolean }) {
      const owner = await accountFor(input.ownerEmail);
      const created = await createPartner(ctx, {
        ownerAccountId: owner.id,
        name: input.name,
        listed: input.listed,
      });
      if (!created.ok) throw new Error(created.reason);
      return { id: created.partner.id };
    },
    /** Registers `url` as a resource of the partner (RFC 8707), as its owner would. */
    async addPartnerResource(partnerId: string, url: string) {
      const added = await addPartnerResource(ctx, partnerId, url);
      if (!added.ok) throw new Error(`cannot add resource: ${added.code}`);
    },
    /** A signed-in browser session of `email`: the value of the `agentpass_session` cookie. */
    async webSession(email: string) {
      return startWebSession(ctx, (await accountFor(email)).id);
    },
    async createPartnerKey(partnerId: string, name = "test") {
      return issue("partner", partnerId, name);
    },
    /** The OAuth client a user key was issued to: null for a key made in the dashboard. */
    async clientOfUserKey(key: string): Promise<string | null | undefined> {
      const checked = await ctx.store.beginHotRead();
      return (await ctx.store.findKeyByHash(checked, "user_keys", hashKey(key)))?.clientId;
    },
    async revokeUserKey(id: string) {
      await revokeKey(ctx, "user", id);
    },
    async revokePartnerKey(id: string) {
      await revokeKey(ctx, "partner", id);
    },
    /** Approves (or denies) a pending `agentpass login` as `email` would in the browser. */
    async decideDeviceLogin(userCode: string, email: string, approve = true) {
      const account = await accountFor(email);
      return decideDeviceLogin(ctx, userCode, account.id, approve);
    },
    /** Approves (or denies) a pending agent registration as `email` would at /device. */
    async decideAgent(userCode: string, email: string, approve = true) {
      const account = await accountFor(email);
      const pending = await ctx.agents.findPendingAgentApproval(
        hashUserCode(ctx, normalizeUserCode(userCode)),
        ctx.clock(),
      );
      if (!pending) return "gone" as const;
      return ctx.agents.decideAgentApproval(
        pending.deviceHash,
        account.id,
        approve ? "approve" : "deny",
        ctx.clock(),
      );
    },
    async close() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export type TestIdentityService = Awaited<ReturnType<typeof startTestIdentityService>>;
