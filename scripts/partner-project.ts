// A partner's first hour, outside this repository: a fresh project installs the packed
// @agentpass/verify (npm run pack), compiles an Express app, a Hono app and a plain fetch handler
// with `tsc --strict` (moduleResolution node16, and type-checks them under bundler and node10),
// then runs each against a real identity service and asks it who a session token belongs to.
//   npm run test:partner
import assert from "node:assert/strict";
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { freePort } from "@agentpass/db/testing";
import { startTestIdentityService } from "@agentpass/identity/testing";

const root = resolve(import.meta.dirname, "..");

const APPS = {
  "express-app": `import express from "express";
import { createVerifier } from "@agentpass/verify";
import { agentPassAuth } from "@agentpass/verify/express";

const app = express();
app.use("/api", agentPassAuth(createVerifier({
  partnerKey: process.env.AGENTPASS_PARTNER_KEY ?? "",
  apiUrl: process.env.AGENTPASS_URL,
})));
app.get("/api/me", (req, res) => {
  const email: string | undefined = req.agentpassEmail;
  res.json({ email });
});
app.listen(Number(process.env.PORT), "127.0.0.1");
`,
  "hono-app": `import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { createVerifier } from "@agentpass/verify";
import { agentPassAuth, type AgentPassVariables } from "@agentpass/verify/hono";

const app = new Hono<{ Variables: AgentPassVariables }>();
app.use("/api/*", agentPassAuth(createVerifier({
  partnerKey: process.env.AGENTPASS_PARTNER_KEY ?? "",
  apiUrl: process.env.AGENTPASS_URL,
})));
app.get("/api/me", (c) => c.json({ email: c.var.agentpassEmail }));
serve({ fetch: app.fetch, port: Number(process.env.PORT), hostname: "127.0.0.1" });
`,
  "fetch-handler": `import { serve } from "@hono/node-server";
import { verify, type VerifyResult } from "@agentpass/verify";

/** A plain Fetch handler, as on any runtime: no framework. */
export async function handle(request: Request): Promise<Response> {
  const result: VerifyResult = await verify(
    process.env.AGENTPASS_PARTNER_KEY ?? "",
    request.headers.get("x-session-token"),
    process.env.AGENTPASS_URL,
  );
  if (!result.ok) return Response.json({ error: result.error }, { status: result.status === 401 ? 401 : 503 });
  return Response.json({ email: result.email });
}
serve({ fetch: handle, port: Number(process.env.PORT), hostname: "127.0.0.1" });
`,
};

/**
 * An agent on Node's own types (no DOM library): it binds a session token to a key of
 * `@agentpass/verify/dpop` and proves it, as a partner's verify with the proof then sees.
 */
const AGENT = `import { verify } from "@agentpass/verify";
import { createDpopKey, dpopHeaders, dpopProof } from "@agentpass/verify/dpop";

const apiUrl = process.env.AGENTPASS_URL ?? "";
const key = await createDpopKey();
const mintUrl = apiUrl + "/api/session-tokens";
const minted = await fetch(mintUrl, {
  method: "POST",
  headers: {
    authorization: "Bearer " + process.env.AGENTPASS_USER_KEY,
    dpop: await dpopProof(key, { method: "POST", url: mintUrl }),
  },
});
const { sessionToken, tokenType } = (await minted.json()) as { sessionToken: string; tokenType?: string };
const called = "https://partner.example/api/me";
const headers = await dpopHeaders(key, sessionToken, "GET", called);
const dpop = { proof: headers.DPoP, method: "GET", url: called };
const result = await verify(process.env.AGENTPASS_PARTNER_KEY, sessionToken, apiUrl, { dpop });
const bare = await verify(process.env.AGENTPASS_PARTNER_KEY, sessionToken, apiUrl);
console.log(JSON.stringify({ tokenType, result: result.ok ? result.email : result.code, bare: bare.ok || bare.code }));
`;

const TSCONFIGS = {
  node16: { module: "node16", moduleResolution: "node16", outDir: "dist" },
  bundler: { module: "esnext", moduleResolution: "bundler", noEmit: true },
  node10: { module: "commonjs", moduleResolution: "node10", esModuleInterop: true, noEmit: true },
};

const run = promisify(execFile);

const results: { name: string; error?: unknown }[] = [];
async function check(name: string, run: () => void | Promise<void>) {
  try {
    await run();
    results.push({ name });
    console.log(`ok ${name}`);
  } catch (error) {
    results.push({ name, error });
    console.log(`not ok ${name}\n${String(error)}`);
  }
}

const tarballs = execFileSync(process.execPath, [join(root, "scripts/pack.ts")], {
  cwd: root,
  encoding: "utf8",
})
  .trim()
  .split("\n");
const verifyTarball = tarballs.find((path) => path.includes("agentpass-verify-"));
if (!verifyTarball) throw new Error(`npm run pack made no @agentpass/verify tarball: ${tarballs}`);

const project = mkdtempSync(join(tmpdir(), "agentpass-partner-"));
const children: ChildProcess[] = [];
// Its PUBLIC_URL is where it listens: a DPoP proof names the URL the agent called.
const identityPort = await freePort();
const identity = await startTestIdentityService({
  port: identityPort,
  env: { PUBLIC_URL: `http://127.0.0.1:${identityPort}` },
});
try {
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "partner", private: true, type: "module" }),
  );
  mkdirSync(join(project, "src"));
  for (const [name, source] of Object.entries(APPS)) {
    writeFileSync(join(project, "src", `${name}.ts`), source);
  }
  execFileSync(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      verifyTarball,
      "express@5",
      "hono@4",
      "@hono/node-server@1",
      "typescript@5",
      "@types/express@5",
      "@types/node@22",
    ],
    { cwd: project, stdio: "inherit" },
  );

  mkdirSync(join(project, "agent"));
  writeFileSync(join(project, "agent", "agent.ts"), AGENT);
  await check("tsc --strict, an agent with Node's types alone", () => {
    writeFileSync(
      join(project, "tsconfig.agent.json"),
      JSON.stringify({
        compilerOptions: {
          target: "es2022",
          lib: ["es2022"],
          types: ["node"],
          module: "node16",
          moduleResolution: "node16",
          strict: true,
          skipLibCheck: false,
          outDir: "agent-dist",
        },
        include: ["agent"],
      }),
    );
    execFileSync(join(project, "node_modules/.bin/tsc"), ["-p", "tsconfig.agent.json"], {
      cwd: project,
      stdio: "inherit",
    });
  });

  for (const [resolution, options] of Object.entries(TSCONFIGS)) {
    await check(`tsc --strict, moduleResolution ${resolution}`, () => {
      writeFileSync(
        join(project, `tsconfig.${resolution}.json`),
        JSON.stringify({
          compilerOptions: { target: "es2022", strict: true, skipLibCheck: false, ...options },
          include: ["src"],
        }),
      );
      execFileSync(join(project, "node_modules/.bin/tsc"), ["-p", `tsconfig.${resolution}.json`], {
        cwd: project,
        stdio: "inherit",
      });
    });
  }

  const partner = await identity.createPartner({ name: "Partner", ownerEmail: "dev@example.com" });
  const partnerKey = await identity.createPartnerKey(partner.id);
  const { key: userKey } = await identity.createUserKey("Ada@Example.com");
  const minted = await fetch(`${identity.url}/api/session-tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${userKey}` },
  });
  const { sessionToken } = (await minted.json()) as { sessionToken: string };

  await check("an agent binds its token with @agentpass/verify/dpop and proves it", async () => {
    // Not execFileSync: the identity service it calls answers from this process.
    const { stdout: output } = await run(
      process.execPath,
      [join(project, "agent-dist", "agent.js")],
      {
        cwd: project,
        env: {
          PATH: process.env.PATH,
          AGENTPASS_URL: identity.url,
          AGENTPASS_PARTNER_KEY: partnerKey.key,
          AGENTPASS_USER_KEY: userKey,
        },
      },
    );
    assert.deepEqual(JSON.parse(output), {
      tokenType: "DPoP",
      result: "ada@example.com",
      bare: "session_token_proof_required",
    });
  });

  for (const name of Object.keys(APPS)) {
    await check(`${name} answers who a token belongs to, through a real verify`, async () => {
      // A port the kernel has just found free: a fixed one can be the local port of any
      // connection open on the machine (47312 once was), and the app's listen then fails.
      const port = await freePort();
      const child = spawn(process.execPath, [join(project, "dist", `${name}.js`)], {
        cwd: project,
        env: {
          PATH: process.env.PATH,
          PORT: String(port),
          AGENTPASS_URL: identity.url,
          AGENTPASS_PARTNER_KEY: partnerKey.key,
        },
        stdio: "inherit",
      });
      children.push(child);
      const url = `http://127.0.0.1:${port}/api/me`;
      let answer: Response | undefined;
      for (let i = 0; i < 100 && !answer; i++) {
        answer = await fetch(url, { headers: { "x-session-token": sessionToken } }).catch(
          () => new Promise<undefined>((done) => setTimeout(done, 50)),
        );
      }
      assert.ok(answer, `${name} did not start`);
      assert.equal(answer.status, 200);
      assert.deepEqual(await answer.json(), { email: "ada@example.com" });
      const refused = await fetch(url, { headers: { "x-session-token": "aps_forged" } });
      assert.equal(refused.status, 401);
      if (name === "fetch-handler") return; // it reads the header its own code names
      // The middlewares take the token as OAuth and MCP clients send it too, and never guess
      // between two different ones.
      const bearer = await fetch(url, { headers: { authorization: `Bearer ${sessionToken}` } });
      assert.deepEqual(await bearer.json(), { email: "ada@example.com" });
      const two = await fetch(url, {
        headers: { authorization: "Bearer aps_other", "x-session-token": sessionToken },
      });
      assert.equal(two.status, 400);
    });
  }
} finally {
  for (const child of children) child.kill();
  await identity.close();
  rmSync(project, { recursive: true, force: true });
}

const failed = results.filter((result) => result.error !== undefined).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
