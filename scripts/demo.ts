import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startProduct } from "./start.ts";

/**
 * `npm run demo`: the whole AgentPass flow in one go, on fresh services in a temporary folder.
 * Every step runs the real command a person or an agent would run, and prints what it did.
 */
const root = fileURLToPath(new URL("..", import.meta.url));
const work = mkdtempSync(join(tmpdir(), "agentpass-demo-"));
const email = "demo@example.com";

/** Runs a command in its own process (the services live in this one, so never synchronously). */
async function run(
  title: string,
  command: string[],
  input?: string,
  env: Record<string, string> = {},
): Promise<string> {
  console.log(`\n▶ ${title}\n  $ ${command.join(" ")}`);
  const output = await new Promise<string>((resolve, reject) => {
    const child = execFile(
      process.execPath,
      command.slice(1),
      {
        cwd: root,
        env: { ...process.env, LOG_LEVEL: "silent", DATA_DIR: join(work, "data"), ...env },
      },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${command.join(" ")}: ${stderr}`)) : resolve(stdout.trim()),
    );
    child.stdin?.end(input ?? "");
  });
  console.log(
    indent(output.replace(/(apu|aps)_[A-Za-z0-9_-]{12,}/g, (secret) => `${secret.slice(0, 12)}…`)),
  );
  return output;
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n");
}

async function call(method: string, url: string, token: string, body?: unknown) {
  console.log(
    `\n▶ ${method} ${url}\n  x-session-token: ${token.slice(0, 12)}…${body ? `\n  ${JSON.stringify(body)}` : ""}`,
  );
  const response = await fetch(url, {
    method,
    headers: { "x-session-token": token, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  console.log(`  → ${response.status} ${text.length > 400 ? `${text.slice(0, 400)}…` : text}`);
  return text ? JSON.parse(text) : null;
}

const product = await startProduct({
  ...process.env,
  DATA_DIR: join(work, "data"),
  PORT: "0",
  NOTES_PORT: "0",
  LOG_LEVEL: "silent",
});
try {
  const { identity, notes } = product;
  console.log(`AgentPass demo — identity ${identity.url}, notes ${notes.url}, files in ${work}`);
  await run("Create the person's AgentPass account", [
    "node",
    "apps/identity/src/bin.ts",
    "accounts",
    "create",
    email,
  ]);
  const userKey = await run("Make a user key for them", [
    "node",
    "apps/identity/src/bin.ts",
    "user-keys",
    "create",
    email,
    "--name",
    "demo",
  ]);
  await run("Give them an account in the notes API", [
    "node",
    "apps/notes/src/bin.ts",
    "users",
    "add",
    email,
  ]);
  const home = {
    HOME: join(work, "home"),
    XDG_CONFIG_HOME: join(work, "home", ".config"),
    AGENTPASS_URL: identity.url,
  };
  await run(
    "Save the key with the agent CLI (a temporary profile)",
    ["node", "packages/cli/src/bin.ts", "login", "--with-key"],
    userKey,
    home,
  );
  const token = await run(
    "Mint a session token",
    ["node", "packages/cli/src/bin.ts", "token"],
    undefined,
    home,
  );

  const created = await call("POST", `${notes.url}/api/notes`, token, {
    title: "Kubernetes upgrade plan",
    contentText: "drain nodes, upgrade control plane, then workers",
  });
  await call("POST", `${notes.url}/api/notes`, token, {
    title: "Groceries",
    contentText: "milk, eggs",
  });
  await call("GET", `${notes.url}/api/notes?search=kube`, token);
  await call("PATCH", `${notes.url}/api/notes/${created.note.id}`, token, {
    title: "Kubernetes 1.40 upgrade plan",
  });
  await call("DELETE", `${notes.url}/api/notes/${created.note.id}`, token);
  await call("GET", `${notes.url}/api/notes`, token);
  console.log("\n✔ Demo complete: the notes API knew the agent's person only through AgentPass.");
} finally {
  await product.close();
  rmSync(work, { recursive: true, force: true });
}
