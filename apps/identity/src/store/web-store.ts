import type { ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import type { IdentityDatabase } from "./schema.ts";

type SignInCode = IdentityDatabase["sign_in_codes"];
type DeviceCode = IdentityDatabase["device_codes"];

/**
 * Storage of the browser side: sign-in codes, sessions and device logins. Hashes only, and the
 * short codes keyed hashes, computed by the domain. Every write goes through `database.write`.
 */
export function createWebStore(database: Pick<StoreDatabase<IdentityDatabase>, "db" | "write">) {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;
  const { write } = database;
  return {
    async insertSignInCode(code: SignInCode): Promise<void> {
      await write((db) => db.insertInto("sign_in_codes").values(code).execute());
    },

    /** The newest unused, unexpired code this browser asked for. */
    async findOpenSignInCode(browserHash: string, now: number): Promise<SignInCode | undefined> {
      return reads
        .selectFrom("sign_in_codes")
        .selectAll()
        .where("browser_hash", "=", browserHash)
        .where("used_at", "is", null)
        .where("expires_at", ">", now)
        .orderBy("created_at", "desc")
        .executeTakeFirst();
    },

    async findSignInCodeByLink(linkHash: string): Promise<SignInCode | undefined> {
      return reads
        .selectFrom("sign_in_codes")
        .selectAll()
        .where("link_hash", "=", linkHash)
        .executeTakeFirst();
    },

    /**
     * Takes one of a code's tries, in the statement that decides it may be taken: answers the
     * code to judge, or undefined when it is spent, used or expired. However many tries arrive
     * at once, at most `maxAttempts` are ever judged.
     */
    async takeSignInAttempt(
      id: string,
      now: number,
      maxAttempts: number,
    ): Promise<Pick<SignInCode, "email" | "code_hash" | "browser_hash" | "attempts"> | undefined> {
      return write((db) =>
        db
          .updateTable("sign_in_codes")
          .set((eb) => ({ attempts: eb("attempts", "+", 1) }))
          .where("id", "=", id)
          .where("attempts", "<", maxAttempts)
          .where("used_at", "is", null)
          .where("expires_at", ">", now)
          .returning(["email", "code_hash", "browser_hash", "attempts"])
          .executeTakeFirst(),
      );
    },

    /** Marks a code used; false when it already was (single use, even under a race). */
    async useSignInCode(id: string, now: number): Promise<boolean> {
      const result = await write((db) =>
        db
          .updateTable("sign_in_codes")
          .set({ used_at: now })
          .where("id", "=", id)
          .where("used_at", "is", null)
          .executeTakeFirst(),
      );
      return result.numUpdatedRows > 0n;
    },

    /** Remembers that this browser signed in with `email`, until `until`. */
    async rememberBrowser(browserHash: string, email: string, until: number): Promise<void> {
      await write((db) =>
        db
          .insertInto("remembered_browsers")
          .values({ browser_hash: browserHash, email, expires_at: until })
          .onConflict((oc) =>
            oc.columns(["browser_hash", "email"]).doUpdateSet({ expires_at: until }),
          )
          .execute(),
      );
    },

    async isRememberedBrowser(browserHash: string, email: string, now: number): Promise<boolean> {
      const row = await reads
        .selectFrom("remembered_browsers")
        .select("expires_at")
        .where("browser_hash", "=", browserHash)
        .where("email", "=", email)
        .where("expires_at", ">", now)
        .executeTakeFirst();
      return row !== undefined;
    },

    async insertSession(session: IdentityDatabase["web_sessions"]): Promise<void> {
      await write((db) => db.insertInto("web_sessions").values(session).execute());
    },

    async findSession(idHash: string) {
      return reads
        .selectFrom("web_sessions")
        .innerJoin("accounts", "accounts.id", "web_sessions.account_id")
        .select([
          "web_sessions.id_hash as idHash",
          "web_sessions.account_id as accountId",
          "web_sessions.last_seen_at as lastSeenAt",
          "web_sessions.expires_at as expiresAt",
          "web_sessions.created_at as createdAt",
          "accounts.email",
        ])
        .where("web_sessions.id_hash", "=", idHash)
        .executeTakeFirst();
    },

    async touchSession(idHash: string, now: number): Promise<void> {
      await write((db) =>
        db
          .updateTable("web_sessions")
          .set({ last_seen_at: now })
          .where("id_hash", "=", idHash)
          .execute(),
      );
    },

    async deleteSession(idHash: string): Promise<void> {
      await write((db) => db.deleteFrom("web_sessions").where("id_hash", "=", idHash).execute());
    },

    async deleteSessionsOf(accountId: string): Promise<void> {
      await write((db) =>
        db.deleteFrom("web_sessions").where("account_id", "=", accountId).execute(),
      );
    },

    async insertDeviceCode(code: DeviceCode): Promise<void> {
      await write((db) => db.insertInto("device_codes").values(code).execute());
    },

    /** The device code whose user code has this keyed hash (`keyedHash`, never the code). */
    async findDeviceCodeByUserCodeHash(userCodeHash: string): Promise<DeviceCode | undefined> {
      return reads
        .selectFrom("device_codes")
        .selectAll()
        .where("user_code_hash", "=", userCodeHash)
        .executeTakeFirst();
    },

    async findDeviceCode(deviceHash: string): Promise<DeviceCode | undefined> {
      return reads
        .selectFrom("device_codes")
        .selectAll()
        .where("device_hash", "=", deviceHash)
        .executeTakeFirst();
    },

    /** Moves a device code from `from` to `to`; false when it was no longer in `from`. */
    async setDeviceStatus(
      deviceHash: string,
      from: DeviceCode["status"],
      to: DeviceCode["status"],
      accountId: string | null,
    ): Promise<boolean> {
      const result = await write((db) =>
        db
          .updateTable("device_codes")
          .set({ status: to, ...(accountId !== null && { account_id: accountId }) })
          .where("device_hash", "=", deviceHash)
          .where("status", "=", from)
          .executeTakeFirst(),
      );
      return result.numUpdatedRows > 0n;
    },

    /**
     * Records a poll of a device code, in one statement: true when it came at least `intervalMs`
     * after the previous one, so of polls arriving together only one is on time.
     */
    async takeDevicePoll(deviceHash: string, now: number, intervalMs: number): Promise<boolean> {
      const onTime = await write((db) =>
        db
          .updateTable("device_codes")
          .set({ last_polled_at: now })
          .where("device_hash", "=", deviceHash)
          .where((eb) =>
            eb.or([eb("last_polled_at", "is", null), eb("last_polled_at", "<=", now - intervalMs)]),
          )
          .executeTakeFirst(),
      );
      if (onTime.numUpdatedRows > 0n) return true;
      // Too soon: the interval starts again from this poll (RFC 8628 section 3.5, slow_down).
      await write((db) =>
        db
          .updateTable("device_codes")
          .set({ last_polled_at: now })
          .where("device_hash", "=", deviceHash)
          .execute(),
      );
      return false;
    },
  };
}

export type WebStore = ReturnType<typeof createWebStore>;
