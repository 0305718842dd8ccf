import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { freePort } from "@agentpass/db/testing";
import { calculateJwkThumbprint } from "jose";
import { loadConfig } from "../../apps/identity/src/config.ts";
import { findAccountByEmail } from "../../apps/identity/src/domain/accounts.ts";
import { decideDeviceLogin } from "../../apps/identity/src/domain/device-login.ts";
import { openIdentityService } from "../../apps/identity/src/service.ts";
import {
  createDpopKey,
  type DpopKey,
  dpopHeaders,
  dpopProof,
} from "../../packages/verify/src/dpop.ts";
import { NODE_FLAGS } from "../node-flags.ts";
import { type StartedProduct, startProduct } from "../start.ts";

// Every fenced block of the README and of the pages under docs/ is a snippet, and the line right
// above it names it: `<!-- snippet: <id> -->` for one this test runs (each id below says how),
// or `<!-- snippet: not run (<why>) -->`. The test finds a snippet by its id on whichever page
// holds it, so moving a snippet between pages keeps it tested; an unmarked block, an unknown id,
// or a known id missing from every page fails.

const root = fileURLToPath(new URL("../..", import.meta.url));

/** How each snippet is run, by id. */
const RUN = {
  "curl-walkthrough": "bash against npm start's services, twice (everything exists the 2nd time)",
  "cli-login": "bash, after the walk-through; the device login is approved as ada",
  "notes-curl": "bash, after cli-login",
  "partner-verify": "bash, after notes-curl",
  "partner-introspect": "bash, after partner-verify",
  "mcp-token": "bash, after partner-introspect",
  "cli-dpop": "bash, after mcp-token",
  "partner-verify-dpop": "bash, after cli-dpop",
  "partner-introspect-dpop": "bash, after partner-verify-dpop",
  "python-dpop": "Debian's python3, the package from packages/python/src, with the CLI logged in",
  "partner-express": "node, as a .mjs: a server the test asks as an agent would, each table row",
  "partner-hono": "node, as a .ts: a server the test asks as an agent would, each table row",
  "partner-fastapi":
    "Debian's python3, the package from packages/python/src: a server asked as partner-express is",
  "partner-flask":
    "Debian's python3, the package from packages/python/src: a server asked as partner-express is",
  "openid-client-device": "node, as a .mjs; the device login is approved as ada",
  "openid-client-dpop":
    "node, as a .mjs after openid-client-device's discovery and device start; approved as ada",
  "mcp-sdk-header": "node, as a .ts, with the CLI logged in",
  "mcp-static-header":
    "its url and headers (the token placeholder minted) initialize an MCP session",
  "mcp-oauth-config": "its url's 401 leads to AgentPass's metadata, as the page says",
  "production-commands":
    "each service started with the flags of scripts/node-flags.ts, then stopped",
  "metrics-scrape": "parsed as YAML (Debian's python3-yaml): two jobs, one per service",
  "metrics-alerts":
    "parsed as YAML: every series an expression names is one a service serves at /metrics",
  "otel-collector":
    "parsed as YAML: an OTLP/HTTP receiver on the port the services' variable names, in a traces pipeline",
  "server-usage": "equal to the usage of agentpass-server --help",
  "notes-usage": "equal to the usage of agentpass-notes --help",
  "cli-logout": "bash, last: afterwards agentpass token has no key",
} as const;
type SnippetId = keyof typeof RUN;

/** The most blocks that may be marked "not run": keep them few. */
const MAX_NOT_RUN = 8;

interface Snippet {
  /** The id of a snippet that is run, or null for one marked "not run". */
  id: string | null;
  code: string;
  /** Where it is, as `page:line`. */
  at: string;
}

/** The pages whose snippets this test owns: the README and docs/ (decisions and scale aside). */
function pages(): string[] {
  const docs = readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md") && name !== "decisions.md" && name !== "scale.md")
    .map((name) => `docs/${name}`);
  return ["README.md", ...docs.sort()];
}

/** Every fenced block of `page`, with the marker on the line above it. */
function snippetsOf(page: string): Snippet[] {
  const lines = readFileSync(join(root, page), "utf8").split("\n");
  const found: Snippet[] = [];
  let skipTo = -1;
  for (const [i, line] of lines.entries()) {
    if (i <= skipTo || !line.startsWith("```")) continue;
    const end = lines.findIndex((line, j) => j > i && line.startsWith("```"));
    assert.ok(end > i, `${page}:${i + 1}: a fence that never closes`);
    const marker = /^<!-- snippet: (.+) -->$/.exec(lines[i - 1] ?? "")?.[1];
    assert.ok(marker, `${page}:${i + 1}: a block without <!-- snippet: … --> above it`);
    const notRun = /^not run \(.+\)$/.test(marker);
    found.push({
      id: notRun ? null : marker,
      code: `${lines.slice(i + 1, end).join("\n")}\n`,
      at: `${page}:${i + 1}`,
    });
    skipTo = end;
  }
  return found;
}

const allSnippets = (): Snippet[] => pages().flatMap(snippetsOf);

/** The snippet `id`, wherever it lives. */
function snippet(id: SnippetId): string {
  const matches = allSnippets().filter((candidate) => candidate.id === id);
  const [only] = matches;
  assert.ok(only && matches.length === 1, `the snippet ${id} is on exactly one page`);
  return only.code;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end. A device login it starts (its user code on stdout or stderr) is
 * approved as `approve` would in the browser, by ada.
 */
function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  approve: (userCode: string) => Promise<void>,
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env });
    let stdout = "";
    let stderr = "";
    const approved = new Set<string>();
    const watch = () => {
      for (const [code] of `${stdout}\n${stderr}`.matchAll(/\b[A-Z]{4}-[A-Z]{4}\b/g)) {
        if (approved.has(code)) continue;
        approved.add(code);
        approve(code).catch((error: unknown) => {
          child.kill();
          reject(error);
        });
      }
    };
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      watch();
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      watch();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

function assertSucceeded(result: Run, what: string): void {
  assert.equal(result.code, 0, `${what} failed:\n${result.stderr}\n${result.stdout}`);
}

describe("the snippets of the README and docs/", () => {
  it("are each marked, as run by this test or as not run, and every one run is on a page", () => {
    const snippets = allSnippets();
    const ids = snippets.flatMap((found) => (found.id === null ? [] : [found.id]));
    for (const found of snippets) {
      if (found.id !== null) assert.ok(found.id in RUN, `${found.at}: unknown snippet ${found.id}`);
    }
    for (const id of Object.keys(RUN)) {
      assert.equal(ids.filter((candidate) => candidate === id).length, 1, `snippet ${id}`);
    }
    const notRun = snippets.filter((found) => found.id === null);
    assert.ok(notRun.length <= MAX_NOT_RUN, `${notRun.length} not run: ${notRun.map((s) => s.at)}`);
  });

  it("not run name only npm scripts and files that exist", () => {
    const scripts = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts;
    for (const found of allSnippets().filter((candidate) => candidate.id === null)) {
      for (const [, name = ""] of found.code.matchAll(/\bnpm (?:run )?([\w:]+)/g)) {
        if (name === "install" || name === "run") continue;
        assert.ok(name in scripts, `${found.at}: npm ${name} is no script of package.json`);
      }
      for (const [, file = ""] of found.code.matchAll(
        /\bnode (?:--\S+ )*(\S+\.(?:ts|mjs|js))\b/g,
      )) {
        assert.ok(existsSync(join(root, file)), `${found.at}: ${file} does not exist`);
      }
    }
  });

  it("are Prometheus configuration that parses and names only the series the services serve", () => {
    const yaml = (text: string) =>
      JSON.parse(
        execFileSync(
          process.env.PYTHON || "/usr/bin/python3",
          ["-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin.read())))"],
          { input: text, encoding: "utf8" },
        ),
      );
    const collector = yaml(snippet("otel-collector")) as {
      receivers: { otlp: { protocols: { http: { endpoint: string } } } };
      service: { pipelines: { traces: { receivers: string[] } } };
    };
    assert.match(collector.receivers.otlp.protocols.http.endpoint, /:4318$/);
    assert.deepEqual(collector.service.pipelines.traces.receivers, ["otlp"]);
    assert.match(
      readFileSync(join(root, "docs/operations.md"), "utf8"),
      /OTEL_EXPORTER_OTLP_ENDPOINT=http:\/\/otel-collector:4318/,
    );
    const scrape = yaml(snippet("metrics-scrape")) as { scrape_configs: { job_name: string }[] };
    assert.deepEqual(
      scrape.scrape_configs.map((job) => job.job_name),
      ["agentpass-identity", "agentpass-notes"],
    );
    const alerts = yaml(snippet("metrics-alerts")) as {
      groups: { rules: { alert: string; expr: string }[] }[];
    };
    const rules = alerts.groups.flatMap((group) => group.rules);
    assert.ok(rules.length >= 3);
    // A histogram's series are its name with _bucket, _sum and _count.
    const sources = [
      "packages/http/src/metrics.ts",
      "apps/notes/src/routes/authentication-metrics.ts",
    ]
      .map((file) => readFileSync(join(root, file), "utf8"))
      .join("\n");
    for (const { alert, expr } of rules) {
      for (const [series] of expr.matchAll(/agentpass_\w+/g)) {
        const name = series.replace(/_(bucket|sum|count)$/, "");
        assert.ok(sources.includes(`"${name}"`), `${alert}: ${series} is served`);
      }
    }
  });

  it("list the admin command lines' usage exactly", () => {
    for (const [id, bin] of [
      ["server-usage", "apps/identity/src/bin.ts"],
      ["notes-usage", "apps/notes/src/bin.ts"],
    ] as const) {
      const usage = execFileSync(process.execPath, [bin, "--help"], { cwd: root, encoding: "utf8" })
        .split("\n")
        .filter((line) => /^ {2}agentpass-/.test(line))
        .map((line) => line.trim());
      const documented = snippet(id)
        .split("\n")
        .map((line) => line.replace(/\s+# .*$/, "").trim())
        .filter(Boolean);
      assert.deepEqual(documented, usage, id);
    }
  });

  it("start each service in production with the flags of scripts/node-flags.ts", async () => {
    const lines = snippet("production-commands").split("\n").filter(Boolean);
    const flagsBefore = (script: string) => {
      const line = lines.find((candidate) => candidate.includes(` ${script} `));
      assert.ok(line, `a command runs ${script}`);
      const words = line.split(" ");
      return words.slice(1, words.indexOf(script));
    };
    assert.deepEqual(flagsBefore("apps/identity/src/bin.ts"), NODE_FLAGS.identity);
    assert.deepEqual(flagsBefore("apps/notes/src/bin.ts"), NODE_FLAGS.notes);

    const scratch = mkdtempSync(join(tmpdir(), "agentpass-production-"));
    const cache = join(scratch, "compile-cache");
    mkdirSync(cache);
    try {
      const exports = lines.filter((line) => line.startsWith("export "));
      for (const command of lines.filter((line) => line.startsWith("node "))) {
        const script = [...exports, `exec ${command}`]
          .join("\n")
          .replaceAll("/var/cache/agentpass", cache);
        const child = spawn("bash", ["-c", script], {
          cwd: root,
          env: { ...terminalEnv(), DATA_DIR: scratch, PORT: "0", LOG_LEVEL: "info" },
        });
        try {
          const url = await listeningUrl(child);
          assert.equal((await fetch(`${url}/healthz`)).status, 200, command);
        } finally {
          await stop(child);
        }
      }
      assert.ok(readdirSync(cache).length > 0, "NODE_COMPILE_CACHE was filled");
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  describe("against npm start's services", () => {
    let product: StartedProduct;
    let dataDir: string;
    let home: string;
    let scratch: string;
    let identityUrl: string;
    let notesUrl: string;
    /** The environment of a reader's terminal: Node 24 and the repository's bins first. */
    let env: NodeJS.ProcessEnv;

    before(async () => {
      dataDir = mkdtempSync(join(tmpdir(), "agentpass-docs-"));
      home = mkdtempSync(join(tmpdir(), "agentpass-docs-home-"));
      mkdirSync(join(root, "test-output"), { recursive: true });
      scratch = mkdtempSync(join(root, "test-output", "docs-snippets-"));
      const [identityPort, notesPort] = [await freePort(), await freePort()];
      identityUrl = `http://localhost:${identityPort}`;
      notesUrl = `http://localhost:${notesPort}`;
      product = await startProduct({
        DATA_DIR: dataDir,
        PORT: String(identityPort),
        NOTES_PORT: String(notesPort),
        LOG_LEVEL: "silent",
      });
      // The packages' own tests rebuild their dist/ while this one runs beside them (npm test
      // runs files in parallel), so the snippets load `agentpass` and `@agentpass/verify` from
      // their sources, which are what dist/ is built from.
      const fromSource = join(scratch, "from-source.mjs");
      writeFileSync(fromSource, fromSourceHooks(pathToFileURL(root).href));
      env = {
        ...terminalEnv(),
        NODE_OPTIONS: `--import=${pathToFileURL(fromSource).href}`,
        NODE_COMPILE_CACHE: join(scratch, "compile-cache"),
        DATA_DIR: dataDir,
        HOME: home,
        XDG_CONFIG_HOME: join(home, ".config"),
        AGENTPASS_NO_BROWSER: "1",
        // What the reader's terminal keeps once cli-login exported it, for the snippets after it.
        AGENTPASS_URL: identityUrl,
      };
    });
    after(async () => {
      await product.close();
      for (const dir of [dataDir, home, scratch]) rmSync(dir, { recursive: true, force: true });
    });

    /** A snippet as the test runs it: only the services' addresses differ from the page. */
    const local = (code: string) =>
      code
        .replaceAll("http://localhost:4000", identityUrl)
        .replaceAll("http://localhost:4001", notesUrl);

    /** Approves a device login as ada would on /device, through a second instance. */
    async function approveAsAda(userCode: string): Promise<void> {
      const loaded = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: "silent" });
      if (!loaded.ok) throw new Error(loaded.error);
      const second = await openIdentityService(loaded.config);
      try {
        const found = await findAccountByEmail(second.ctx, "ada@example.com");
        if (!found.ok) throw new Error(`no account for ada: ${found.code}`);
        const decided = await decideDeviceLogin(second.ctx, userCode, found.account.id, true);
        if (!decided) throw new Error(`the device login ${userCode} was not pending`);
      } finally {
        await second.close();
      }
    }

    const bash = (script: string) =>
      run(
        "bash",
        ["-c", `set -eo pipefail\nshopt -s expand_aliases\n${local(script)}`],
        env,
        approveAsAda,
      );

    /**
     * Asserts that what the snippet says a command prints (`# → …` lines) was printed: each part
     * between the `…` elisions, in order, leaving out a trailing `(HTTP <status>)` note.
     */
    function assertDocumentedOutput(code: string, output: string): void {
      for (const [, said = ""] of local(code).matchAll(/^# → (.+)$/gm)) {
        let from = 0;
        for (const part of said
          .replace(/\s+\(HTTP \d+\)$/, "")
          .split("…")
          .filter(Boolean)) {
          const at = output.indexOf(part, from);
          assert.ok(at >= 0, `printed: ${said}\n(missing ${part})\n${output}`);
          from = at + part.length;
        }
      }
    }

    /** Asserts the walk-through's two answers are in `output`. */
    function assertWalkedThrough(output: string, round: string): void {
      assert.match(output, /\{"email":"ada@example\.com"\}/, round);
      assert.match(
        output,
        /\{"error":"Partner key has been revoked","code":"partner_key_revoked"\}/,
        round,
      );
    }

    it("curl-walkthrough: works as written", async () => {
      const result = await bash(snippet("curl-walkthrough"));
      assertSucceeded(result, "the walk-through");
      assertWalkedThrough(result.stdout, "round 1");
      assertDocumentedOutput(snippet("curl-walkthrough"), result.stdout);
    });

    it("the walk-through again, when everything exists, then the agent's, the notes API's and the partner's snippets in a row", async () => {
      const ids: SnippetId[] = [
        "curl-walkthrough",
        "cli-login",
        "notes-curl",
        "partner-verify",
        "partner-introspect",
        "mcp-token",
        "cli-dpop",
        "partner-verify-dpop",
        "partner-introspect-dpop",
      ];
      const result = await bash(ids.map((id) => `# ${id}\n${snippet(id)}`).join("\n"));
      assertSucceeded(result, ids.join(", "));
      assertWalkedThrough(result.stdout, "round 2");
      for (const id of ids) assertDocumentedOutput(snippet(id), result.stdout);
      assert.match(
        result.stderr,
        /To log in, open .*\/device and enter the code [A-Z]{4}-[A-Z]{4}/,
      );
      assert.match(
        result.stdout,
        /"title":"Kubernetes 1\.31 upgrade".*"tags":\[\{"id":"[^"]+","name":"work"/,
      );
      assert.match(result.stdout, /"total":1/);
      // curl prints no newline after a body: the example's line may follow one on the same line.
      assert.match(result.stdout, /(?:^|\})ada@example\.com$/m, "examples/verify-token.mjs");
      assert.match(result.stdout, /\{"active":true,"email":"ada@example\.com"/, "introspection");
      assert.match(result.stdout, /^aps_\S+$/m, "agentpass token");
      assert.match(result.stdout, /^Authorization: DPoP aps_\S+\nDPoP: ey\S+$/m, "headers");
      // The partner's three verifies of one bound token: with its proof, again, without it.
      assert.match(
        result.stdout,
        /\{"email":"ada@example\.com"\}\n\{"error":"Invalid DPoP proof: The DPoP proof was used already \(its jti\)","code":"session_token_proof_invalid"\}\n\{"error":"This session token is bound to a key: send its DPoP proof","code":"session_token_proof_required"\}/,
      );
      assert.match(result.stdout, /"token_type":"DPoP","cnf":\{"jkt":"[\w-]{43}"\}\}/);
    });

    it("openid-client-device: discovers, logs in by device flow and refreshes", async () => {
      const file = join(scratch, "device-login.mjs");
      writeFileSync(file, snippet("openid-client-device"));
      const result = await run(
        process.execPath,
        [file],
        { ...env, AGENTPASS_URL: identityUrl },
        approveAsAda,
      );
      assertSucceeded(result, "the openid-client snippet");
      assert.match(result.stdout, /Open http:\/\/localhost:\d+\/device and type [A-Z]{4}-[A-Z]{4}/);
      assert.match(result.stdout, /^bearer 300$/im);
    });

    it("openid-client-dpop: logs in by device flow with a DPoP key and refreshes bound", async () => {
      // The snippet goes on from the device snippet's discovery and start, as the page says.
      const device = snippet("openid-client-device");
      const started = device.slice(0, device.indexOf("const tokens ="));
      const file = join(scratch, "device-login-dpop.mjs");
      writeFileSync(file, `${started}${snippet("openid-client-dpop")}`);
      const result = await run(
        process.execPath,
        [file],
        { ...env, AGENTPASS_URL: identityUrl },
        approveAsAda,
      );
      assertSucceeded(result, "the openid-client DPoP snippet");
      assert.match(result.stdout, /^dpop$/im);
    });

    it("mcp-sdk-header: calls a tool and reads a note over /mcp with the CLI's tokens", async () => {
      const file = join(scratch, "mcp-client.ts");
      writeFileSync(file, snippet("mcp-sdk-header"));
      const result = await run(process.execPath, [file], { ...env, NOTES: notesUrl }, approveAsAda);
      assertSucceeded(result, "the MCP SDK snippet");
      assert.match(result.stdout, /"total":1/);
      assert.match(result.stdout, /^note:\/\/\S+$/m);
    });

    it("python-dpop: reads notes with tokens bound to the key the CLI saved", async () => {
      const file = join(scratch, "agent_dpop.py");
      // What the snippet bound its tokens to, for the test: the key's thumbprint and a token.
      const told = "\nprint(tokens.dpop_thumbprint)\nprint(tokens.token())\n";
      writeFileSync(file, `${snippet("python-dpop")}${told}`);
      const result = await run(
        python(),
        [file],
        { ...env, NOTES: notesUrl, PYTHONPATH: join(root, "packages/python/src") },
        approveAsAda,
      );
      assertSucceeded(result, "the Python DPoP snippet");
      const [total, thumbprint, token = ""] = result.stdout.trim().split("\n");
      assert.equal(total, "1");
      const saved = JSON.parse(
        readFileSync(join(home, ".config", "agentpass", "credentials.json"), "utf8"),
      )[identityUrl];
      assert.equal(thumbprint, await calculateJwkThumbprint(saved.dpopKey), "the login's key");
      // Copied alone, the token opens nothing.
      const partner = admin(
        "partners",
        "create",
        "--name",
        "python-dpop",
        "--owner",
        "ada@example.com",
      );
      const partnerKey = JSON.parse(admin("partner-keys", "create", partner, "--json"));
      const verified = await fetch(`${identityUrl}/api/verify`, {
        method: "POST",
        headers: { authorization: `Bearer ${partnerKey.key}` },
        body: JSON.stringify({ sessionToken: token }),
      });
      assert.equal(verified.status, 401);
      assert.equal(
        ((await verified.json()) as { code: string }).code,
        "session_token_proof_required",
      );
    });

    it("mcp-static-header: is a configuration an MCP client connects with", async () => {
      const config = JSON.parse(local(snippet("mcp-static-header"))).mcpServers.notes;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(config.headers as Record<string, string>)) {
        // The placeholder names the command whose output goes there.
        headers[name] = value.replace(/<output of ([^>]+)>/, (_, command: string) =>
          execFileSync("bash", ["-c", command], { cwd: root, env, encoding: "utf8" }).trim(),
        );
      }
      const answer = await initialize(config.url, headers);
      assert.equal(answer.status, 200, await answer.clone().text());
      assert.equal((await answer.json()).result.serverInfo !== undefined, true);
    });

    it("mcp-oauth-config: its URL leads a client to AgentPass's metadata", async () => {
      const config = JSON.parse(local(snippet("mcp-oauth-config"))).mcpServers.notes;
      const refused = await initialize(config.url, {});
      assert.equal(refused.status, 401);
      const challenge = refused.headers.get("www-authenticate") ?? "";
      const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
      assert.equal(metadataUrl, `${notesUrl}/.well-known/oauth-protected-resource/mcp`);
      const resource = await (await fetch(metadataUrl)).json();
      assert.deepEqual(resource.authorization_servers, [identityUrl]);
      const server = await (
        await fetch(`${identityUrl}/.well-known/oauth-authorization-server`)
      ).json();
      assert.equal(server.scopes_supported, undefined, "no scopes: the claim is omitted");
      assert.equal(server.registration_endpoint, `${identityUrl}/oauth/register`);
    });

    /** `agentpass-server` against npm start's database: its stdout, trimmed. */
    const admin = (...args: string[]) =>
      execFileSync(process.execPath, [join(root, "apps/identity/src/bin.ts"), ...args], {
        cwd: root,
        env: { ...env, LOG_LEVEL: "silent" },
        encoding: "utf8",
      }).trim();

    /** A fresh session token of ada's, minted as an agent does; bound to `key` when given. */
    async function mintAsAda(userKey: string, key?: DpopKey): Promise<string> {
      const url = `${identityUrl}/api/session-tokens`;
      const headers: Record<string, string> = { authorization: `Bearer ${userKey}` };
      if (key) headers.dpop = await dpopProof(key, { method: "POST", url });
      const minted = await fetch(url, { method: "POST", headers });
      assert.equal(minted.status, 201, await minted.clone().text());
      const body = (await minted.json()) as { sessionToken: string; tokenType?: string };
      assert.equal(body.tokenType, key ? "DPoP" : undefined);
      return body.sessionToken;
    }

    /** The public base URL the partner snippets are told (`PUBLIC_URL`), as behind a proxy. */
    const partnerPublicUrl = "https://partner.example";

    /**
     * The rows of docs/partners.md for a token bound to the agent's key: served with a fresh proof
     * for the partner's public URL; refused without one, with one replayed, or with one for the
     * URL the request was addressed to (`asked`) rather than the public one.
     */
    async function assertDpopRows(
      me: (headers: Record<string, string>) => Promise<Response>,
      userKey: string,
      asked: string,
    ): Promise<void> {
      const key = await createDpopKey();
      const token = await mintAsAda(userKey, key);
      const proven = await dpopHeaders(key, token, "GET", `${partnerPublicUrl}/api/me`);
      const served = await me(proven);
      assert.equal(served.status, 200, "a bound token with its proof");
      assert.deepEqual(await served.json(), { email: "ada@example.com" });
      const refusals: [string, Record<string, string>, string, RegExp][] = [
        ["the proof replayed", proven, "session_token_proof_invalid", /used already/],
        ["as Bearer", { authorization: `Bearer ${token}` }, "session_token_proof_required", /./],
        [
          "without a proof",
          { authorization: `DPoP ${token}` },
          "session_token_proof_required",
          /./,
        ],
        [
          "a proof for the URL asked, not the public one",
          await dpopHeaders(key, token, "GET", asked),
          "session_token_proof_invalid",
          /htu is not this URL/,
        ],
      ];
      for (const [what, headers, code, message] of refusals) {
        const refused = await me(headers);
        assert.equal(refused.status, 401, what);
        const body = (await refused.json()) as { error: string; code: string };
        assert.equal(body.code, code, what);
        assert.match(body.error, message, what);
        const error =
          code === "session_token_proof_required" ? "invalid_token" : "invalid_dpop_proof";
        const challenge = refused.headers.get("www-authenticate") ?? "";
        assert.match(challenge, new RegExp(`^DPoP error="${error}", error_description="`), what);
        assert.match(challenge, /algs="ES256 EdDSA"/, what);
      }
    }

    const partnerServers: { id: SnippetId; file: string; command: () => string }[] = [
      { id: "partner-express", file: "partner.mjs", command: () => process.execPath },
      { id: "partner-hono", file: "partner.ts", command: () => process.execPath },
      { id: "partner-fastapi", file: "partner_fastapi.py", command: python },
      { id: "partner-flask", file: "partner_flask.py", command: python },
    ];
    for (const { id, file, command } of partnerServers) {
      it(`${id}: answers the agent as the table of docs/partners.md says`, async () => {
        const partner = admin("partners", "create", "--name", id, "--owner", "ada@example.com");
        const partnerKey = JSON.parse(admin("partner-keys", "create", partner, "--json"));
        const userKey = admin("user-keys", "create", "ada@example.com", "--name", id);
        const path = join(scratch, file);
        writeFileSync(path, snippet(id));
        const port = await freePort();
        const child = spawn(command(), [path], {
          cwd: scratch,
          env: {
            ...env,
            PORT: String(port),
            AGENTPASS_URL: identityUrl,
            AGENTPASS_PARTNER_KEY: partnerKey.key,
            PUBLIC_URL: partnerPublicUrl,
            PYTHONPATH: join(root, "packages/python/src"),
            PYTHONDONTWRITEBYTECODE: "1",
          },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let output = "";
        child.stdout.on("data", (chunk) => {
          output += chunk;
        });
        child.stderr.on("data", (chunk) => {
          output += chunk;
        });
        try {
          const me = await serving(`http://127.0.0.1:${port}/api/me`, child, () => output);
          const token = await mintAsAda(userKey);
          const bothWays: Record<string, string>[] = [
            { authorization: `Bearer ${token}` },
            { "x-session-token": token },
          ];
          for (const headers of bothWays) {
            const served = await me(headers);
            assert.equal(served.status, 200, `${JSON.stringify(headers)}\n${output}`);
            assert.deepEqual(await served.json(), { email: "ada@example.com" });
          }
          const refusals: [Record<string, string>, number, string, RegExp][] = [
            [{}, 401, "session_token_missing", /^Bearer(?!.*error=)/],
            [
              { "x-session-token": "aps_forged" },
              401,
              "session_token_invalid",
              /error="invalid_token"/,
            ],
            [
              { authorization: `Bearer ${token}`, "x-session-token": "aps_other" },
              400,
              "invalid_request",
              /error="invalid_request"/,
            ],
          ];
          for (const [headers, status, code, challenge] of refusals) {
            const refused = await me(headers);
            assert.equal(refused.status, status, code);
            assert.equal(((await refused.json()) as { code: string }).code, code);
            assert.match(refused.headers.get("www-authenticate") ?? "", challenge, code);
          }
          await assertDpopRows(me, userKey, `http://127.0.0.1:${port}/api/me`);
          // The partner's own key revoked: its fault, not the agent's token: 503, never a 401.
          admin("partner-keys", "revoke", partnerKey.id);
          const unavailable = await me({ "x-session-token": await mintAsAda(userKey) });
          assert.equal(unavailable.status, 503);
          assert.equal(unavailable.headers.get("retry-after"), "5");
          assert.equal(
            ((await unavailable.json()) as { code: string }).code,
            "identity_unavailable",
          );
        } finally {
          await stop(child);
        }
      });
    }

    it("cli-logout: revokes and forgets the key", async () => {
      const result = await bash(snippet("cli-logout"));
      assertSucceeded(result, "agentpass logout");
      const afterwards = await bash(`export AGENTPASS_URL=http://localhost:4000\nagentpass token`);
      assert.notEqual(afterwards.code, 0, "no key is left to mint with");
    });
  });
});

/**
 * Waits until a snippet's server at `url` answers (or fails if it exits first); then a GET of
 * `url` with the given headers.
 */
async function serving(
  url: string,
  child: ChildProcess,
  output: () => string,
): Promise<(headers: Record<string, string>) => Promise<Response>> {
  const get = (headers: Record<string, string>) => fetch(url, { headers });
  // At most 600 tries 100 ms apart: a server that neither listens nor exits fails the test.
  for (let tries = 0; tries < 600; tries++) {
    if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}:\n${output()}`);
    try {
      await get({});
      return get;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`never answered at ${url}:\n${output()}`);
}

/** Debian's interpreter, where python3-fastapi and python3-flask install; PYTHON names another. */
function python(): string {
  return process.env.PYTHON ?? (existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3");
}

/** An MCP initialize request to `url`. */
function initialize(url: string, headers: Record<string, string>): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: {
      ...headers,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "docs-test", version: "1.0.0" },
      },
    }),
  });
}

/** This process's environment, its Node and the repository's bins first, and no display. */
function terminalEnv(): NodeJS.ProcessEnv {
  const { DISPLAY: _display, WAYLAND_DISPLAY: _wayland, ...rest } = process.env;
  const bins = [join(root, "node_modules", ".bin"), join(process.execPath, "..")];
  return { ...rest, PATH: [...bins, process.env.PATH].join(":") };
}

/** The URL a starting service logs once it listens. */
function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = "";
    child.stdout?.on("data", (chunk) => {
      output += chunk;
      const url = /"url":"(http:\/\/[^"]+)".*listening/.exec(output)?.[1];
      if (url) resolve(url);
    });
    child.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    child.on("close", (code) => reject(new Error(`exited ${code} before listening:\n${output}`)));
  });
}

/** Stops a service as a supervisor would, and waits for it to exit. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.on("close", resolve));
  child.kill("SIGTERM");
  await exited;
}

/**
 * A module for `--import` that resolves the built files of `packages/cli` and `packages/verify`
 * (`dist/*.js`, and `@agentpass/verify`) to their sources (`src/*.ts`).
 */
function fromSourceHooks(rootUrl: string): string {
  return `import { registerHooks } from "node:module";
const root = ${JSON.stringify(rootUrl)};
registerHooks({
  resolve(specifier, context, nextResolve) {
    const verify = /^@agentpass\\/verify(?:\\/(.+))?$/.exec(specifier);
    if (verify) return { url: root + "packages/verify/src/" + (verify[1] ?? "index") + ".ts", shortCircuit: true };
    if (specifier.startsWith(".") && context.parentURL) {
      const built = /\\/packages\\/(cli|verify)\\/dist\\/(.+)\\.js$/.exec(new URL(specifier, context.parentURL).href);
      if (built) return { url: root + "packages/" + built[1] + "/src/" + built[2] + ".ts", shortCircuit: true };
    }
    return nextResolve(specifier, context);
  },
});
`;
}
