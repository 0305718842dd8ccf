import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { loadConfig } from "../src/config.ts";

const folder = mkdtempSync(join(tmpdir(), "agentpass-config-"));
after(() => rmSync(folder, { recursive: true, force: true }));

/** A file in the test's folder holding `text`; its path. */
function fileWith(name: string, text: string): string {
  const path = join(folder, name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

const SECRET = randomBytes(32).toString("base64url");
const DEV = { DATA_DIR: folder, LOG_LEVEL: "silent" };
const PRODUCTION = { ...DEV, PUBLIC_URL: "https://agentpass.example", SMTP_URL: "smtp://mail" };

function loaded(env: Record<string, string>) {
  const result = loadConfig(env);
  if (!result.ok) assert.fail(result.error);
  return result;
}

describe("identity configuration", () => {
  describe("unknown variables close to a setting", () => {
    it("are named at start in development, and the service starts", () => {
      for (const [name, meant] of [
        ["DATABSE_URL", "DATABASE_URL"],
        ["DATABASE_RUL", "DATABASE_URL"],
        ["AGENTPASS_SECERT", "AGENTPASS_SECRET"],
        ["SMTP_UR", "SMTP_URL"],
        ["LOGLEVEL", "LOG_LEVEL"],
        ["PROT", "PORT"],
        ["database_url", "DATABASE_URL"],
        ["AGENTPASS_SECRET_FLIE", "AGENTPASS_SECRET_FILE"],
      ] as const) {
        const result = loaded({ ...DEV, [name]: "postgres://db.example/agentpass" });
        assert.deepEqual(result.warnings, [`${name}: did you mean ${meant}?`], name);
        assert.equal(result.config.databaseUrl, undefined);
      }
    });

    it("stop the start in production (an https PUBLIC_URL)", () => {
      assert.deepEqual(loadConfig({ ...PRODUCTION, DATABSE_URL: "postgres://db/agentpass" }), {
        ok: false,
        error:
          "DATABSE_URL: did you mean DATABASE_URL? (PUBLIC_URL is https: this stops the start)",
      });
    });

    it("never include the rest of the environment, the notes API's variables or npm start's", () => {
      const others = [
        ...["PATH", "HOME", "USER", "SHELL", "PWD", "TERM", "LANG", "HOSTNAME", "TMPDIR", "TZ"],
        ...["PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE", "PORT0", "NODE_ENV"],
        ...["NODE_OPTIONS", "NODE_COMPILE_CACHE", "HTTP_PROXY", "NO_PROXY", "CI", "DEBUG"],
        ...["TEST_DATABASE_URL", "TEST_REDIS_URL", "REDIS_HOST", "DATABASE_USER", "LOG_FORMAT"],
        ...["AGENTPASS_URL", "AGENTPASS_PARTNER_KEY", "AGENTPASS_TIMEOUT_MS", "READER_THREADS"],
        ...["SEARCH_TIMEOUT_MS", "MAX_NOTES_PER_USER", "MAX_TEXT_BYTES_PER_USER"],
        ...["AGENTPASS_PARTNER_KEY_FILE", "NOTES_PORT", "NOTES_DATABASE_URL", "NOTES_PUBLIC_URL"],
        ...["AGENTPASS_TOKEN_MIN_TTL_SECONDS", "AGENTPASS_NO_BROWSER", "npm_config_port"],
      ];
      const env = Object.fromEntries(others.map((name) => [name, "x"]));
      assert.deepEqual(loaded({ ...PRODUCTION, ...env }).warnings, []);
    });

    it("include a setting given as a file where only secrets are read from files", () => {
      const path = fileWith("public-url", "https://agentpass.example\n");
      assert.deepEqual(loaded({ ...DEV, PUBLIC_URL_FILE: path }).warnings, [
        "PUBLIC_URL_FILE: PUBLIC_URL cannot be read from a file; set it directly",
      ]);
    });
  });

  it("refuses a PUBLIC_URL that is not http or https", () => {
    for (const url of [
      "javascript:alert(1)",
      "ftp://agentpass.example",
      "data:text/html,x",
      "//x",
    ]) {
      assert.deepEqual(
        loadConfig({ ...DEV, PUBLIC_URL: url }),
        { ok: false, error: "Invalid PUBLIC_URL: must be an http:// or https:// URL" },
        url,
      );
    }
  });

  it("refuses a session token lifetime past the spec's 5 minutes", () => {
    for (const seconds of ["86400", "301"]) {
      assert.deepEqual(loadConfig({ ...DEV, SESSION_TOKEN_TTL_SECONDS: seconds }), {
        ok: false,
        error:
          "Invalid SESSION_TOKEN_TTL_SECONDS: must be at most 300 (a session token lives 5 minutes)",
      });
    }
    assert.equal(
      loaded({ ...DEV, SESSION_TOKEN_TTL_SECONDS: "300" }).config.sessionTokenTtlSeconds,
      300,
    );
    assert.equal(
      loaded({ ...DEV, SESSION_TOKEN_TTL_SECONDS: "2" }).config.sessionTokenTtlSeconds,
      2,
    );
  });

  it("names the variable of a malformed URL, never showing the URL (it may hold a password)", () => {
    for (const [name, url, reason] of [
      ["SMTP_URL", "smtp://mailer:hunter2@mail:port", "must be an smtp:// or smtps:// URL"],
      ["SMTP_URL", "smtp://mailer:hunter2@[::1", "must be an smtp:// or smtps:// URL"],
      ["REDIS_URL", "redis://:hunter2@cache:port/0", "must be a redis:// or rediss:// URL"],
      [
        "DATABASE_URL",
        "postgres://app:hunter2@db:port/agentpass",
        "must be a postgres:// URL (leave it unset for SQLite)",
      ],
    ] as const) {
      const result = loadConfig({ ...DEV, [name]: url });
      assert.deepEqual(result, { ok: false, error: `Invalid ${name}: ${reason}` }, url);
    }
  });

  it("takes the URLs the clients take, with a password and PostgreSQL's socket form", () => {
    const config = loaded({
      ...DEV,
      SMTP_URL: "smtps://mailer:p%40ss@mail.example:465",
      REDIS_URL: "rediss://:secret@cache.example:6380/2",
      DATABASE_URL: "postgres://app:secret@/agentpass?host=/run/postgresql",
    }).config;
    assert.equal(config.smtpUrl, "smtps://mailer:p%40ss@mail.example:465");
    assert.equal(config.redisUrl, "rediss://:secret@cache.example:6380/2");
    assert.equal(config.databaseUrl, "postgres://app:secret@/agentpass?host=/run/postgresql");
  });

  describe("secrets from files (<NAME>_FILE)", () => {
    const key = `0a0b0c0d:${randomBytes(32).toString("base64")}`;
    const cases = [
      ["AGENTPASS_SECRET", SECRET, "secret"],
      ["TOKEN_KEYS", key, "tokenKeys"],
      ["DATABASE_URL", "postgres://app:secret@db.example/agentpass", "databaseUrl"],
      ["REDIS_URL", "redis://:secret@cache.example:6379", "redisUrl"],
      ["SMTP_URL", "smtp://mailer:secret@mail.example:587", "smtpUrl"],
      ["METRICS_TOKEN", "a-metrics-token-of-some-length", "metricsToken"],
    ] as const;

    it("reads each secret from the file, its trailing newline dropped", () => {
      for (const [name, value, field] of cases) {
        const path = fileWith(name, `${value}\n`);
        const config = loaded({ ...DEV, [`${name}_FILE`]: path }).config;
        const read = field === "tokenKeys" ? config.tokenKeys?.[0]?.id : config[field];
        assert.equal(read, field === "tokenKeys" ? "0a0b0c0d" : value, name);
      }
    });

    it("refuses a secret set both ways, naming both", () => {
      for (const [name, value] of cases) {
        const path = fileWith(name, value);
        assert.deepEqual(loadConfig({ ...DEV, [name]: value, [`${name}_FILE`]: path }), {
          ok: false,
          error: `Invalid ${name}_FILE: ${name} is set too; set one of them`,
        });
      }
    });

    it("refuses a file it cannot read, naming the variable and the path", () => {
      const missing = join(folder, "no-such-file");
      assert.deepEqual(loadConfig({ ...DEV, AGENTPASS_SECRET_FILE: missing }), {
        ok: false,
        error: `Invalid AGENTPASS_SECRET_FILE: cannot read ${missing}: no such file or directory (ENOENT)`,
      });
      assert.deepEqual(loadConfig({ ...DEV, SMTP_URL_FILE: folder }), {
        ok: false,
        error: `Invalid SMTP_URL_FILE: cannot read ${folder}: illegal operation on a directory (EISDIR)`,
      });
    });

    it("names the file's variable when the value in it is invalid, never the value", () => {
      const short = fileWith("short-secret", "hunter2\n");
      assert.deepEqual(loadConfig({ ...DEV, AGENTPASS_SECRET_FILE: short }), {
        ok: false,
        error:
          "Invalid AGENTPASS_SECRET (read from AGENTPASS_SECRET_FILE): must be at least 32 characters",
      });
      const empty = fileWith("empty-token", "\n");
      const result = loadConfig({ ...DEV, METRICS_TOKEN_FILE: empty });
      assert.equal(result.ok, false);
      assert.match(
        result.ok ? "" : result.error,
        /^Invalid METRICS_TOKEN \(read from METRICS_TOKEN_FILE\)/,
      );
    });
  });

  describe("sign-in codes and links in the log", () => {
    it("are allowed only in development on loopback: SMTP_URL is required anywhere else", () => {
      for (const url of [
        "http://agentpass.example",
        "http://10.0.0.5:4000",
        "https://agentpass.example",
      ]) {
        assert.deepEqual(
          loadConfig({ ...DEV, PUBLIC_URL: url }),
          {
            ok: false,
            error:
              "Invalid SMTP_URL: required unless in development (listening on loopback only, PUBLIC_URL http on a loopback host): PUBLIC_URL is not http on a loopback host",
          },
          url,
        );
        assert.ok(loadConfig({ ...DEV, PUBLIC_URL: url, SMTP_URL: "smtp://mail" }).ok, url);
      }
      for (const url of [
        undefined,
        "http://localhost:4000",
        "http://127.0.0.1:4000",
        "http://[::1]:4000",
      ]) {
        const result = loadConfig({ ...DEV, ...(url ? { PUBLIC_URL: url } : {}) });
        assert.ok(result.ok, url);
        assert.equal(result.config.smtpUrl, undefined);
        assert.equal(result.config.development, true);
        assert.deepEqual(result.config.host, ["127.0.0.1", "::1"], "listens on loopback only");
      }
    });

    it("are never allowed where the service listens beyond loopback, whatever PUBLIC_URL says", () => {
      for (const [host, url] of [
        ["0.0.0.0", undefined], // the image: HOST=0.0.0.0 and no PUBLIC_URL
        ["0.0.0.0", "http://localhost:8080"], // compose: published on every interface
        ["::", "http://127.0.0.1:4000"],
        ["192.168.1.20", "http://[::1]:4000"],
      ]) {
        const env = { ...DEV, HOST: host as string, ...(url ? { PUBLIC_URL: url } : {}) };
        assert.deepEqual(loadConfig(env), {
          ok: false,
          error: `Invalid SMTP_URL: required unless in development (listening on loopback only, PUBLIC_URL http on a loopback host): HOST=${host} answers other machines`,
        });
        const production = loaded({ ...env, SMTP_URL: "smtp://mail" }).config;
        assert.equal(production.development, false, `${host} runs with production rules`);
        assert.equal(production.shutdownDrainMs, 5000, "and drains for a load balancer");
      }
      for (const host of ["127.0.0.1", "::1", "localhost"]) {
        assert.equal(loaded({ ...DEV, HOST: host }).config.development, true, host);
      }
    });
  });

  describe("DATA_DIR", () => {
    const refusal = (dataDir: string) => {
      const result = loadConfig({ LOG_LEVEL: "silent", DATA_DIR: dataDir });
      return result.ok ? "started" : result.error;
    };

    it("is made when it is missing, with its missing parents", () => {
      const dataDir = join(folder, "made", "for", "it");
      assert.equal(loaded({ ...DEV, DATA_DIR: dataDir }).config.dataDir, dataDir);
      assert.ok(existsSync(dataDir));
    });

    it("stops the start with `DATA_DIR <path>: <reason>` when it cannot be used", () => {
      const file = fileWith("a-file", "");
      assert.equal(refusal(file), `DATA_DIR ${file}: not a directory`);
      assert.equal(
        refusal(join(file, "data")),
        `DATA_DIR ${join(file, "data")}: ${file} is not a directory`,
      );
      const dangling = join(folder, "dangling");
      symlinkSync(join(folder, "gone"), dangling);
      assert.equal(
        refusal(join(dangling, "data")),
        `DATA_DIR ${join(dangling, "data")}: cannot create ${dangling}: file already exists (EEXIST)`,
      );
    });

    it("fails, not spins, where mkdir answers ENOENT in a directory that exists", (t) => {
      // Node's recursive mkdir steps between /proc (a directory) and /proc/nope (ENOENT) forever.
      if (!existsSync("/proc/self")) return t.skip("no /proc on this system");
      assert.equal(
        refusal("/proc/nope"),
        "DATA_DIR /proc/nope: cannot create /proc/nope: no such file or directory (ENOENT)",
      );
    });

    it("stops the start when this user cannot write it", (t) => {
      if (process.getuid?.() === 0) return t.skip("root writes any folder");
      const readOnly = join(folder, "read-only");
      loaded({ ...DEV, DATA_DIR: readOnly });
      chmodSync(readOnly, 0o500);
      assert.equal(
        refusal(readOnly),
        `DATA_DIR ${readOnly}: not usable: permission denied (EACCES)`,
      );
    });

    it("is not looked at when nothing is kept there (PostgreSQL, and the secret in a setting)", () => {
      const result = loadConfig({
        LOG_LEVEL: "silent",
        DATA_DIR: "/proc/nope",
        DATABASE_URL: "postgres://db.example/agentpass",
        AGENTPASS_SECRET: SECRET,
      });
      assert.ok(result.ok);
    });
  });
});
