import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import dockerignore from "@balena/dockerignore";
import { loadConfig } from "../../apps/identity/src/config.ts";
import { loadNotesConfig } from "../../apps/notes/src/config.ts";

/**
 * What can be checked of the deploy recipe on a machine without a container daemon
 * (docs/operations.md, "Deploying"): the compose file parses and holds together, every command it
 * runs is a real entrypoint of this repository, and the image builds the production install and
 * runs as an unprivileged user. (`.ci/run` also runs the production install itself.)
 */
const root = join(import.meta.dirname, "..", "..");
const PYTHON = process.env.PYTHON || "/usr/bin/python3";

interface ComposeService {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  secrets?: string[];
  depends_on?: Record<string, { condition: string }> | string[];
  volumes?: string[];
}

function readCompose(): {
  services: Record<string, ComposeService>;
  secrets: Record<string, { file: string }>;
} {
  // Debian's python3-yaml (ensure-test-tools installs it): YAML anchors and merge keys resolved
  // as Compose resolves them.
  const json = execFileSync(
    PYTHON,
    [
      "-c",
      "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
      join(root, "compose.yaml"),
    ],
    { encoding: "utf8" },
  );
  return JSON.parse(json);
}

describe("the deploy recipe", () => {
  it("runs two identity instances, the notes API, PostgreSQL, Redis and a load balancer, migrated first by jobs of their own", () => {
    const { services, secrets } = readCompose();
    for (const name of ["postgres", "redis", "lb", "notes", "identity-1", "identity-2"]) {
      assert.ok(services[name], `service ${name}`);
    }
    const identities = ["identity-1", "identity-2"].map((name) => services[name]);
    for (const identity of identities) {
      assert.deepEqual(identity?.depends_on, {
        "migrate-identity": { condition: "service_completed_successfully" },
        redis: { condition: "service_started" },
      });
      assert.equal(identity?.environment?.MIGRATE_ON_START, "false", "instances never migrate");
      assert.equal(identity?.environment?.AGENTPASS_SECRET_FILE, "/run/secrets/agentpass-secret");
      assert.equal(identity?.environment?.AGENTPASS_SECRET, undefined, "no secret in the file");
    }
    assert.deepEqual(services["migrate-identity"]?.command, [
      "node",
      "apps/identity/src/bin.ts",
      "migrate",
    ]);
    assert.deepEqual(services.notes?.depends_on, {
      "migrate-notes": { condition: "service_completed_successfully" },
      "notes-partner": { condition: "service_completed_successfully" },
    });
    for (const secret of Object.values(secrets)) {
      assert.match(secret.file, /^\.\/secrets\//, "secrets live in an ignored folder");
    }
    assert.ok(readFileSync(join(root, ".gitignore"), "utf8").includes("secrets/"));
  });

  it("runs only entrypoints this repository has, and balances over both identity instances", () => {
    const { services } = readCompose();
    for (const [name, service] of Object.entries(services)) {
      if (!service.command) continue;
      const script = service.command.find((part) => part.endsWith(".ts"));
      assert.ok(script && existsSync(join(root, script)), `${name} runs ${script}`);
    }
    const balancer = readFileSync(join(root, "deploy", "haproxy.cfg"), "utf8");
    assert.match(balancer, /server identity-1 identity-1:4000/);
    assert.match(balancer, /server identity-2 identity-2:4000/);
    assert.match(balancer, /option httpchk GET \/readyz/);
    for (const volume of services.lb?.volumes ?? []) {
      const source = volume.split(":")[0] as string;
      assert.ok(existsSync(join(root, source)), `the balancer mounts ${source}`);
    }
  });

  it("builds the production install on Node 24 and runs as an unprivileged user", () => {
    const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
    const stages = dockerfile.match(/^FROM .*/gm) ?? [];
    assert.ok(stages.length >= 2, "multi-stage");
    for (const stage of stages) assert.match(stage, /^FROM node:24[-\w.]*( AS \w+)?$/);
    assert.match(dockerfile, /RUN npm ci --omit=dev/);
    assert.match(dockerfile, /^USER node$/m);
    const command = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    assert.ok(command);
    const script = (JSON.parse(command) as string[]).find((part) => part.endsWith(".ts"));
    assert.ok(script && existsSync(join(root, script)));
  });

  it("sends no secret, database, environment file or history to the image build", () => {
    // Matched as Docker matches its build context (a port of Docker's own matcher). The package
    // is CommonJS whose types declare a default export: `.default` is the factory either way.
    const ignored = dockerignore.default().add(readFileSync(join(root, ".dockerignore"), "utf8"));
    for (const path of [
      "secrets/agentpass-secret",
      "secrets/x",
      "deploy/secrets/notes-partner-key",
      "data/identity.sqlite",
      "data/identity.secret",
      "apps/identity/data/notes.sqlite",
      ".env",
      ".env.local",
      ".env.production",
      "apps/notes/.env.local",
      ".git/config",
      "identity.secret",
    ]) {
      assert.ok(ignored.ignores(path), `${path} stays out of the image`);
    }
    for (const path of [
      "apps/identity/src/bin.ts",
      "apps/notes/src/bin.ts",
      "package.json",
      "package-lock.json",
      "packages/db/src/index.ts",
    ]) {
      assert.ok(!ignored.ignores(path), `${path} goes into the image`);
    }
  });

  it("runs the final stage as an unprivileged user and copies no secret into it", () => {
    const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
    const stages = dockerfile.split(/^FROM /m).slice(1);
    const final = stages.at(-1) ?? "";
    const users = [...final.matchAll(/^USER\s+(\S+)/gm)].map((match) => match[1]);
    assert.ok(users.length > 0, "the final stage names a USER");
    assert.doesNotMatch(users.at(-1) ?? "", /^(root|0)(:|$)/, "the last USER is not root");
    for (const stage of stages) {
      for (const copy of stage.match(/^(COPY|ADD) .*/gm) ?? []) {
        assert.doesNotMatch(copy, /secret|\.env|(^|[\s/])data\//i, copy);
      }
    }
  });

  it("gives the notes API a partner key made by a job before it starts, and names the public issuer", () => {
    const { services } = readCompose();
    const job = services["notes-partner"];
    const notes = services.notes;
    assert.ok(job && notes);
    assert.deepEqual(job.depends_on, {
      "migrate-identity": { condition: "service_completed_successfully" },
    });
    const command = job.command ?? [];
    assert.deepEqual(command.slice(0, 4), [
      "node",
      "apps/identity/src/bin.ts",
      "partners",
      "provision",
    ]);
    const keyFile = command[command.indexOf("--key-file") + 1];
    assert.equal(notes.environment?.AGENTPASS_PARTNER_KEY_FILE, keyFile, "the notes API reads it");
    const volumeOf = (service: ComposeService) =>
      service.volumes?.find((volume) => keyFile?.startsWith(`${volume.split(":")[1]}/`));
    assert.equal(volumeOf(job)?.split(":")[0], volumeOf(notes)?.split(":")[0], "one volume");
    assert.match(volumeOf(notes) ?? "", /:ro$/, "read-only where the notes API reads it");
    assert.equal(notes.environment?.AGENTPASS_URL, "http://lb:8080");
    assert.equal(
      notes.environment?.AGENTPASS_PUBLIC_URL,
      services["identity-1"]?.environment?.PUBLIC_URL,
      "the issuer it names is the identity service's public URL",
    );
  });

  it("sets METRICS_TOKEN from a secret file on every service that serves", () => {
    const { services, secrets } = readCompose();
    for (const name of ["identity-1", "identity-2", "notes"]) {
      const service = services[name];
      assert.equal(service?.environment?.METRICS_TOKEN_FILE, "/run/secrets/metrics-token", name);
      assert.ok(service?.secrets?.includes("metrics-token"), name);
    }
    assert.equal(secrets["metrics-token"]?.file, "./secrets/metrics-token");
  });

  it("starts each service with production rules, as the image and compose configure it", () => {
    const { services } = readCompose();
    const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
    const imageEnv = Object.fromEntries(
      [...(/^ENV ((?:.*\\\n)*.*)$/m.exec(dockerfile)?.[1] ?? "").matchAll(/(\w+)=(\S+)/g)].map(
        (match) => [match[1] as string, match[2] as string],
      ),
    );
    assert.equal(imageEnv.HOST, "0.0.0.0", "the image listens on every interface");
    const folder = mkdtempSync(join(tmpdir(), "agentpass-compose-"));
    try {
      // Each *_FILE names a file of the container: a file of this test stands in for it.
      const withFiles = (environment: Record<string, string>) => {
        const env: Record<string, string> = { ...imageEnv, ...environment, DATA_DIR: folder };
        for (const [name, path] of Object.entries(env)) {
          if (!name.endsWith("_FILE")) continue;
          const stand = join(folder, name);
          const content =
            name === "AGENTPASS_PARTNER_KEY_FILE" ? `apk_${"a".repeat(38)}` : "x".repeat(40);
          writeFileSync(stand, content);
          env[name] = stand;
          assert.ok(path.startsWith("/"));
        }
        return env;
      };
      for (const name of ["identity-1", "identity-2", "notes-partner", "migrate-identity"]) {
        const loaded = loadConfig(withFiles(services[name]?.environment ?? {}));
        assert.ok(loaded.ok, `${name}: ${loaded.ok ? "" : loaded.error}`);
        assert.equal(loaded.config.development, false, `${name} runs with production rules`);
      }
      for (const name of ["notes", "migrate-notes"]) {
        const loaded = loadNotesConfig(withFiles(services[name]?.environment ?? {}));
        assert.ok(loaded.ok, `${name}: ${loaded.ok ? "" : loaded.error}`);
        assert.equal(loaded.config.development, false, `${name} runs with production rules`);
      }
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
