import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import pino from "pino";
import { loadNotesConfig } from "../src/config.ts";
import { openNotesService } from "../src/service.ts";

const folder = mkdtempSync(join(tmpdir(), "agentpass-notes-config-"));
after(() => rmSync(folder, { recursive: true, force: true }));

const DEV = { DATA_DIR: folder, LOG_LEVEL: "silent" };
const PRODUCTION = { ...DEV, PUBLIC_URL: "https://notes.example" };

function fileWith(name: string, text: string): string {
  const path = join(folder, name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

function loaded(env: Record<string, string>) {
  const result = loadNotesConfig(env);
  if (!result.ok) assert.fail(result.error);
  return result;
}

describe("notes API configuration", () => {
  it("names an unknown variable close to a setting, and starts in development", () => {
    const result = loaded({ ...DEV, AGENTPASS_PARTNR_KEY: "apk_x", SEARCH_TIMOUT_MS: "50" });
    assert.deepEqual(result.warnings, [
      "AGENTPASS_PARTNR_KEY: did you mean AGENTPASS_PARTNER_KEY?",
      "SEARCH_TIMOUT_MS: did you mean SEARCH_TIMEOUT_MS?",
    ]);
    assert.equal(result.config.partnerKey, undefined);
  });

  it("stops the start for it in production (an https PUBLIC_URL)", () => {
    assert.deepEqual(loadNotesConfig({ ...PRODUCTION, AGENTPASS_PARTNR_KEY: "apk_x" }), {
      ok: false,
      error:
        "AGENTPASS_PARTNR_KEY: did you mean AGENTPASS_PARTNER_KEY? (PUBLIC_URL is https: this stops the start)",
    });
  });

  it("never names the identity service's variables, which `npm start` and shared files pass it", () => {
    const identity = [
      ...["TRUST_PROXY", "MAX_CONNECTIONS", "SESSION_TOKEN_TTL_SECONDS", "SMTP_URL", "MAIL_FROM"],
      ...["REDIS_URL", "MINTS_PER_MINUTE", "FAILED_VERIFIES_PER_MINUTE", "BAD_KEYS_PER_MINUTE"],
      ...["REVOCATIONS_PER_MINUTE", "CLIENT_REGISTRATIONS_PER_HOUR", "TOKEN_KEYS"],
      ...["CLIENT_DOCUMENT_FETCHES_PER_MINUTE", "CLIENT_DOCUMENT_FETCHES_PER_HOST_PER_MINUTE"],
      ...["CLIENT_DOCUMENT_FETCHES_AT_ONCE", "AGENTPASS_SECRET", "AUDIT_RETENTION_DAYS"],
      ...["AGENTPASS_SECRET_FILE", "TOKEN_KEYS_FILE", "REDIS_URL_FILE", "SMTP_URL_FILE"],
      ...["NOTES_PORT", "NOTES_DATABASE_URL", "NOTES_PUBLIC_URL", "PATH", "HOME", "PGPORT"],
    ];
    const env = Object.fromEntries(identity.map((name) => [name, "x"]));
    assert.deepEqual(loaded({ ...PRODUCTION, ...env }).warnings, []);
  });

  describe("development", () => {
    it("is a loopback PUBLIC_URL (or none) served on loopback only", () => {
      const loopback: Record<string, string>[] = [
        {},
        { PUBLIC_URL: "http://localhost:4001" },
        { HOST: "127.0.0.1" },
      ];
      for (const env of loopback) {
        const { config } = loaded({ ...DEV, ...env });
        assert.equal(config.development, true, JSON.stringify(env));
        assert.equal(config.shutdownDrainMs, 0);
      }
      assert.deepEqual(loaded({ ...DEV, PUBLIC_URL: "http://localhost:4001" }).config.host, [
        "127.0.0.1",
        "::1",
      ]);
    });

    it("is never a service that listens beyond loopback, whatever PUBLIC_URL says", () => {
      const beyond: Record<string, string>[] = [
        { HOST: "0.0.0.0" }, // the image
        { HOST: "0.0.0.0", PUBLIC_URL: "http://localhost:8081" }, // compose
        { HOST: "::" },
        { HOST: "10.1.2.3", PUBLIC_URL: "http://127.0.0.1:4001" },
      ];
      for (const env of beyond) {
        const { config } = loaded({ ...DEV, ...env });
        assert.equal(config.development, false, JSON.stringify(env));
        assert.equal(config.shutdownDrainMs, 5000, "drains for a load balancer");
      }
    });
  });

  describe("the authorization server it names", () => {
    it("is AGENTPASS_PUBLIC_URL, the issuer, when AgentPass is reached by another URL inside", () => {
      const { config } = loaded({
        ...DEV,
        AGENTPASS_URL: "http://lb:8080",
        AGENTPASS_PUBLIC_URL: "https://agentpass.example/",
      });
      assert.equal(config.agentpassUrl, "http://lb:8080");
      assert.equal(config.agentpassPublicUrl, "https://agentpass.example");
    });

    it("is what the protected resource metadata names, not the URL the API calls", async () => {
      const { config } = loaded({
        ...DEV,
        DATA_DIR: join(folder, "issuer"),
        PUBLIC_URL: "http://localhost:8081",
        AGENTPASS_URL: "http://lb:8080",
        AGENTPASS_PUBLIC_URL: "http://localhost:8080",
      });
      const service = await openNotesService(config, { logger: pino({ level: "silent" }) });
      try {
        for (const path of ["", "/mcp"]) {
          const answer = await service.request(`/.well-known/oauth-protected-resource${path}`);
          const metadata = (await answer.json()) as { authorization_servers: string[] };
          assert.deepEqual(metadata.authorization_servers, ["http://localhost:8080"], path);
        }
      } finally {
        await service.close();
      }
    });

    it("is AGENTPASS_URL when AGENTPASS_PUBLIC_URL is unset", () => {
      const { config } = loaded({ ...DEV, AGENTPASS_URL: "http://localhost:4000/" });
      assert.equal(config.agentpassPublicUrl, "http://localhost:4000");
    });
  });

  it("refuses a PUBLIC_URL or AGENTPASS_URL that is not http or https", () => {
    for (const name of ["PUBLIC_URL", "AGENTPASS_URL"]) {
      assert.deepEqual(loadNotesConfig({ ...DEV, [name]: "javascript:alert(1)" }), {
        ok: false,
        error: `Invalid ${name}: must be an http:// or https:// URL`,
      });
    }
  });

  it("names DATABASE_URL when it is malformed, without showing it", () => {
    assert.deepEqual(
      loadNotesConfig({ ...DEV, DATABASE_URL: "postgres://app:hunter2@db:port/x" }),
      {
        ok: false,
        error: "Invalid DATABASE_URL: must be a postgres:// URL (leave it unset for SQLite)",
      },
    );
  });

  describe("secrets from files (<NAME>_FILE)", () => {
    const cases = [
      ["AGENTPASS_PARTNER_KEY", "apk_a-partner-key", "partnerKey"],
      ["DATABASE_URL", "postgres://notes:secret@db.example/notes", "databaseUrl"],
      ["METRICS_TOKEN", "a-metrics-token-of-some-length", "metricsToken"],
    ] as const;

    it("reads each secret from the file, its trailing newline dropped", () => {
      for (const [name, value, field] of cases) {
        const path = fileWith(name, `${value}\r\n`);
        assert.equal(loaded({ ...DEV, [`${name}_FILE`]: path }).config[field], value, name);
      }
    });

    it("refuses a secret set both ways, naming both", () => {
      for (const [name, value] of cases) {
        assert.deepEqual(
          loadNotesConfig({ ...DEV, [name]: value, [`${name}_FILE`]: fileWith(name, value) }),
          { ok: false, error: `Invalid ${name}_FILE: ${name} is set too; set one of them` },
        );
      }
    });

    it("refuses a file it cannot read, naming the variable and the path", () => {
      const missing = join(folder, "no-such-key");
      assert.deepEqual(loadNotesConfig({ ...DEV, AGENTPASS_PARTNER_KEY_FILE: missing }), {
        ok: false,
        error: `Invalid AGENTPASS_PARTNER_KEY_FILE: cannot read ${missing}: no such file or directory (ENOENT)`,
      });
    });
  });

  describe("DATA_DIR", () => {
    const refusal = (dataDir: string) => {
      const result = loadNotesConfig({ LOG_LEVEL: "silent", DATA_DIR: dataDir });
      return result.ok ? "started" : result.error;
    };

    it("is made when it is missing", () => {
      const dataDir = join(folder, "new", "data");
      loaded({ ...DEV, DATA_DIR: dataDir });
      assert.ok(existsSync(dataDir));
    });

    it("stops the start with `DATA_DIR <path>: <reason>` when it cannot be used", () => {
      const file = fileWith("a-file", "");
      assert.equal(refusal(file), `DATA_DIR ${file}: not a directory`);
      const dangling = join(folder, "dangling");
      symlinkSync(join(folder, "gone"), dangling);
      assert.equal(
        refusal(join(dangling, "data")),
        `DATA_DIR ${join(dangling, "data")}: cannot create ${dangling}: file already exists (EEXIST)`,
      );
    });

    it("fails, not spins, where mkdir answers ENOENT in a directory that exists", (t) => {
      if (!existsSync("/proc/self")) return t.skip("no /proc on this system");
      assert.equal(
        refusal("/proc/nope"),
        "DATA_DIR /proc/nope: cannot create /proc/nope: no such file or directory (ENOENT)",
      );
    });

    it("is not looked at on PostgreSQL", () => {
      const result = loadNotesConfig({
        LOG_LEVEL: "silent",
        DATA_DIR: join(fileWith("not-a-folder", ""), "data"),
        DATABASE_URL: "postgres://db.example/notes",
      });
      assert.ok(result.ok);
    });
  });
});
