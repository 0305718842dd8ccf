import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createTestDatabase, type TestDatabase, testEngines } from "@agentpass/db/testing";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const IDENTITY = "apps/identity/src/bin.ts";
const NOTES = "apps/notes/src/bin.ts";

/** Runs a bin to completion; its stdout is the answer, its stderr goes to `logs`. */
function run(bin: string, args: string[], env: Record<string, string>, logs: string[]) {
  return new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd: ROOT, env: { PATH: "", ...env } },
      (error, stdout, stderr) => {
        logs.push(stderr);
        if (error) reject(new Error(`${bin} ${args.join(" ")}: ${stderr}`));
        else resolve(stdout.trim());
      },
    );
  });
}

/** `serve` at the most verbose level, every byte it writes kept in `logs`. */
function serve(bin: string, env: Record<string, string>, logs: string[]) {
  const child = spawn(process.execPath, [bin, "serve"], {
    cwd: ROOT,
    env: { PATH: "", PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "trace", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const keep = (chunk: Buffer) => {
    output += chunk;
    logs.push(chunk.toString());
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const url = new Promise<string>((resolve, reject) => {
    child.stdout.on("data", () => {
      const found = /"url":"(http:\/\/[^"]+)"/.exec(output)?.[1];
      if (found) resolve(found);
    });
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${output}`)));
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const stop = () => {
    child.kill("SIGTERM");
    return exited;
  };
  return { url, stop };
}

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
