import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { createTestDatabase, type TestDatabase, testEngines } from "@agentpass/db/testing";
import { IDENTITY, NOTES, runBin, serveBin } from "./support/bins.ts";

/** `serve` at the most verbose level. */
const serve = (bin: string, env: Record<string, string>, logs: string[]) =>
  serveBin(bin, { LOG_LEVEL: "trace", ...env }, logs);
const run = runBin;

for (const engine of testEngines()) {
  describe(`log hygiene (${engine})`, () => {
    const databases: TestDatabase[] = [];
    after(async () => {
      for (const database of databases) await database.drop();
    });

    it("no issued key or token appears in any log line or error answer, whatever is sent where", async () => {
      const identityDb = await createTestDatabase(engine);
      const notesDb = await createTestDatabase(engine);
      databases.push(identityDb, notesDb);
      const logs: string[] = [];
      const bodies: string[] = [];
      const identityEnv = {
        DATA_DIR: identityDb.dataDir,
        DATABASE_URL: identityDb.databaseUrl ?? "",
        // Enough room for every call below; the limits are tested elsewhere.
        BAD_KEYS_PER_MINUTE: "1000",
      };
      const admin = (...args: string[]) => run(IDENTITY, args, identityEnv, logs);

      await admin("migrate");
      await admin("accounts", "create", "Hygiene@Example.com");
      const userKey = await admin("user-keys", "create", "hygiene@example.com");
      const revokedUser = JSON.parse(
        await admin("user-keys", "create", "hygiene@example.com", "--json"),
      ) as { id: string; key: string };
      const partnerId = JSON.parse(
        await admin(
          "partners",
          "create",
          "--name",
          "Notes",
          "--owner",
          "hygiene@example.com",
          "--json",
        ),
      ).id as string;
      const partnerKey = await admin("partner-keys", "create", partnerId);
      const notesKey = await admin("partner-keys", "create", partnerId, "--name", "notes");
      const revokedPartner = JSON.parse(
        await admin("partner-keys", "create", partnerId, "--json"),
      ) as { id: string; key: string };
      await admin("user-keys", "revoke", revokedUser.id);
      await admin("partner-keys", "revoke", revokedPartner.id);

      const identity = serve(IDENTITY, identityEnv, logs);
      const identityUrl = await identity.url;
      const notesEnv = {
        DATA_DIR: notesDb.dataDir,
        DATABASE_URL: notesDb.databaseUrl ?? "",
        AGENTPASS_URL: identityUrl,
        AGENTPASS_PARTNER_KEY: notesKey,
      };
      await run(NOTES, ["migrate"], notesEnv, logs);
      await run(NOTES, ["users", "add", "hygiene@example.com"], notesEnv, logs);
      const notes = serve(NOTES, notesEnv, logs);
      const notesUrl = await notes.url;

      const send = async (base: string, path: string, init: RequestInit = {}) => {
        const response = await fetch(`${base}${path}`, init);
        const text = await response.text();
        return { status: response.status, text };
      };
      const mintResponse = await send(identityUrl, "/api/session-tokens", {
        method: "POST",
        headers: { authorization: `Bearer ${userKey}` },
      });
      const token = JSON.parse(mintResponse.text).sessionToken as string;
      const secrets = [userKey, revokedUser.key, partnerKey, notesKey, revokedPartner.key, token];
      const answer = async (base: string, path: string, init: RequestInit = {}) => {
        const { status, text } = await send(base, path, init);
        bodies.push(`${status} ${text}`);
        return status;
      };
      const verify = (authorization: string, body: string) =>
        answer(identityUrl, "/api/verify", {
          method: "POST",
          headers: { authorization, "content-type": "application/json" },
          body,
        });

      // Every secret in every wrong place of the identity service.
      assert.equal(
        await verify(`Bearer ${partnerKey}`, JSON.stringify({ sessionToken: token })),
        200,
      );
      for (const secret of secrets) {
        await verify(`Bearer ${secret}`, JSON.stringify({ sessionToken: secret }));
        await verify(`Bearer ${partnerKey}`, `{"sessionToken":"${secret}"`);
        await verify(`Basic ${secret}`, JSON.stringify({ sessionToken: 1, echo: secret }));
        await verify(
          `Bearer ${partnerKey}`,
          JSON.stringify({ sessionToken: token, pad: secret.repeat(3000) }),
        );
        await answer(identityUrl, "/api/session-tokens", {
          method: "POST",
          headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
          body: JSON.stringify({ audience: secret }),
        });
        await answer(identityUrl, `/api/verify?sessionToken=${secret}`);
        await answer(identityUrl, `/${secret}`);
        await answer(identityUrl, "/api/device/token", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            device_code: secret,
            grant_type: "urn:ietf:params:oauth:grant-type:device_code",
          }),
        });
        // And in every wrong place of the notes API.
        await answer(notesUrl, "/api/notes", { headers: { "x-session-token": secret } });
        await answer(notesUrl, `/api/notes?search=${secret}`, {
          headers: { "x-session-token": token },
        });
        await answer(notesUrl, `/api/notes/${secret}`, { headers: { "x-session-token": token } });
        await answer(notesUrl, "/api/notes", {
          method: "POST",
          headers: { "x-session-token": token, authorization: `Bearer ${secret}` },
          body: `{"title":"${secret}`,
        });
      }
      assert.equal(
        await verify(`Bearer ${revokedPartner.key}`, JSON.stringify({ sessionToken: token })),
        403,
      );

      await notes.stop();
      await identity.stop();
      const everything = logs.join("");
      assert.ok(everything.includes("listening"), "the logs were captured");
      assert.equal(bodies.length, secrets.length * 12 + 2);
      for (const secret of secrets) {
        assert.ok(!everything.includes(secret), `a secret (${secret.slice(0, 4)}…) is in the logs`);
        for (const body of bodies) {
          assert.ok(
            !body.includes(secret),
            `a secret (${secret.slice(0, 4)}…) is in an answer: ${body.slice(0, 80)}`,
          );
        }
      }
    });
  });
}
