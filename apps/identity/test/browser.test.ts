import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { testEngines } from "@agentpass/db/testing";
import { type RunningServer, startServer } from "@agentpass/http";
import { type Browser, chromium, type Page } from "playwright-core";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const CLI = fileURLToPath(new URL("../../../packages/cli/src/bin.ts", import.meta.url));
const SHOTS = fileURLToPath(new URL("../../../test-output/screenshots/", import.meta.url));
// Chromium as a root-run test needs it: no sandbox as root, no GPU, and no calls home.
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

// One engine is enough for the walk in a browser; the same rules are tested over HTTP on both.
const engine = testEngines()[0] ?? "sqlite";

describe(`the dashboard in Chromium (${engine})`, () => {
  let identity: TestIdentity;
  let mailbox: Mailbox;
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  let home: string;
  let shot = 0;
  const email = "Grace.Hopper@Example.com";

  const screenshot = (name: string) =>
    page.screenshot({
      path: join(SHOTS, `${String(++shot).padStart(2, "0")}-${name}.png`),
      fullPage: true,
    });

  const cliEnv = () => ({
    PATH: process.env.PATH ?? "",
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    AGENTPASS_URL: server.url,
  });

  const cli = (args: string[], stdin = ""): Promise<CliRun> =>
    new Promise((resolve) => {
      const child = execFile(
        process.execPath,
        [CLI, ...args],
        { env: cliEnv() },
        (error, stdout, stderr) =>
          resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      );
      child.stdin?.end(stdin);
    });

  const verify = async (partnerKey: string, sessionToken: string) => {
    const response = await fetch(`${server.url}/api/verify`, {
      method: "POST",
      headers: { authorization: `Bearer ${partnerKey}`, "content-type": "application/json" },
      body: JSON.stringify({ sessionToken }),
    });
    return { status: response.status, body: await response.json() };
  };

  before(async () => {
    rmSync(SHOTS, { recursive: true, force: true });
    mkdirSync(SHOTS, { recursive: true });
    home = mkdtempSync(join(tmpdir(), "agentpass-browser-home-"));
    mailbox = await startMailbox();
    identity = await openTestIdentity(engine, { SMTP_URL: mailbox.url }, { realClock: true });
    server = await startServer(
      { listener: identity.service.listener, close: async () => {} },
      { port: 0, host: "127.0.0.1" },
    );
    assert.ok(
      existsSync(CHROMIUM),
      `No Chromium at ${CHROMIUM}: install Debian's (apt-get install -y chromium) or set CHROMIUM_PATH`,
    );
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
    });
    page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    await identity?.close();
    await mailbox?.close();
    rmSync(home, { recursive: true, force: true });
  });

  let userKey = "";
  let partnerKey = "";
  let partnerUrl = "";

  it("signs up with the code mailed to a loopback SMTP server", async () => {
    await page.goto(`${server.url}/sign-in`);
    await screenshot("sign-in");
    await page.getByLabel("Email").fill(email);
    const since = mailbox.mails.length;
    await page.getByRole("button", { name: "Send me a code" }).click();
    await page.waitForURL(/\/sign-in\/code/);
    const { code } = signInSecrets(await mailbox.next("grace.hopper@example.com", since));
    await screenshot("enter-code");
    await page.getByLabel("Code").fill(code);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(/\/keys$/);
    assert.equal(await page.locator("h1").textContent(), "Your user keys");
    await screenshot("signed-up");
  });

  it("creates a user key, shown once with a working copy button, and logs the CLI in with it", async () => {
    await page.getByLabel("Name (the machine or agent it is for)").fill("laptop");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.waitForURL(/\/keys$/);
    userKey = ((await page.locator("#new-key").textContent()) ?? "").trim();
    assert.match(userKey, /^apu_[A-Za-z0-9]{38}$/);
    // The copy button is hidden until the page's script runs: visible means the CSP let it run.
    assert.equal(await page.locator("button[data-copy]").isVisible(), true);
    await screenshot("user-key-created");

    // The post was answered with a redirect: reloading shows the page again, not the key, and
    // makes no second key.
    await page.reload();
    assert.equal(await page.locator("#new-key").count(), 0, "the key is shown once");
    assert.equal(await page.locator("#live-keys tbody tr").count(), 1);

    const login = await cli(["login", "--with-key"], `${userKey}\n`);
    assert.equal(login.code, 0, login.stderr);
    const token = await cli(["token"]);
    assert.equal(token.code, 0);
    assert.match(token.stdout, /^aps_/);
  });

  it("approves a device login started by `agentpass login`", async () => {
    const deviceHome = mkdtempSync(join(tmpdir(), "agentpass-device-home-"));
    const child = spawn(process.execPath, [CLI, "login", "--no-browser"], {
      env: { ...cliEnv(), HOME: deviceHome, XDG_CONFIG_HOME: join(deviceHome, ".config") },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    const exited = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? 1)));
    const userCode = await new Promise<string>((resolve) =>
      child.stderr.on("data", (chunk) => {
        stderr += chunk;
        const shown = /enter the code ([A-Z]{4}-[A-Z]{4})/.exec(stderr)?.[1];
        if (shown) resolve(shown);
      }),
    );
    await page.goto(`${server.url}/device`);
    await page
      .getByLabel("Type the code shown in your own terminal by agentpass login")
      .fill(userCode);
    await page.getByRole("button", { name: "Continue" }).click();
    await page.waitForURL(/\/device$/);
    assert.equal(await page.locator("#device-code").textContent(), userCode);
    await screenshot("device-approve");
    await page.getByRole("button", { name: "Approve" }).click();
    await page.getByText("Approved.").waitFor();
    assert.equal(await exited, 0, stderr);
    await page.goto(`${server.url}/keys`);
    // A device login is a connected app, listed once below the keys made by hand.
    assert.match(
      (await page.locator("#connected-apps-table").textContent()) ?? "",
      /agentpass on /,
    );
    // The CLI's login is a bearer grant (`agentpass token` mints without a proof), and says so.
    assert.equal(
      await page
        .getByRole("row", { name: /agentpass on / })
        .getByRole("cell", { name: "Bearer (not bound)" })
        .count(),
      1,
    );
    await screenshot("keys-after-device-login");
    rmSync(deviceHome, { recursive: true, force: true });
  });

  it("creates a listed partner and a partner key that verifies the CLI's token", async () => {
    await page.goto(`${server.url}/partners`);
    await page.getByLabel("Name").fill("Grace's Notes");
    await page.getByLabel("Website").fill("https://notes.example");
    await page.getByLabel("Description").fill("Notes your agent can keep for you");
    await page.getByLabel("List in the public partner directory").check();
    await page.getByRole("button", { name: "Create partner" }).click();
    await page.waitForURL(/\/partners\/[0-9a-f-]{36}$/);
    partnerUrl = page.url();
    await page.getByLabel("Key name").fill("production");
    await page.getByRole("button", { name: "Create partner key" }).click();
    await page.waitForURL(partnerUrl);
    partnerKey = ((await page.locator("#new-key").textContent()) ?? "").trim();
    assert.match(partnerKey, /^apk_/);
    await screenshot("partner-key-created");

    const token = await cli(["token"]);
    const verified = await verify(partnerKey, token.stdout.trim());
    assert.deepEqual(verified, { status: 200, body: { email: "grace.hopper@example.com" } });
  });

  it("shows the verification in the partner's usage and in the person's activity", async () => {
    await page.goto(partnerUrl);
    assert.equal(
      await page.locator('#usage-totals tr[data-outcome="success"] td').nth(1).textContent(),
      "1",
    );
    assert.equal(await page.locator("svg#usage-chart").isVisible(), true);
    await screenshot("partner-usage");
    await page.goto(`${server.url}/activity`);
    assert.match((await page.locator("table").textContent()) ?? "", /Grace's Notes/);
    await screenshot("activity");
  });

  it("revokes the partner key after a confirmation, and verify answers 403", async () => {
    await page.goto(partnerUrl);
    await page.getByRole("link", { name: "Revoke production" }).click();
    await screenshot("revoke-confirm");
    await page.getByRole("button", { name: "Revoke partner key" }).click();
    await page.getByText("Partner key production revoked.").waitFor();
    const token = await cli(["token"]);
    const verified = await verify(partnerKey, token.stdout.trim());
    assert.deepEqual(verified, {
      status: 403,
      body: { error: "Partner key has been revoked", code: "partner_key_revoked" },
    });
  });

  it("finds the partner in the public directory, on a phone too", async () => {
    const phone = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await phone.goto(`${server.url}/directory`);
    assert.match((await phone.locator("main").textContent()) ?? "", /Grace's Notes/);
    const width = await phone.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 390, `no sideways scrolling on a phone (page is ${width}px wide)`);
    await phone.screenshot({
      path: join(SHOTS, `${String(++shot).padStart(2, "0")}-directory-phone.png`),
      fullPage: true,
    });
    await phone.close();
  });

  it("renames a key, folds revoked keys away below the live ones, and revokes a connected app", async () => {
    await page.goto(`${server.url}/keys`);
    await page.getByRole("link", { name: "Rename laptop" }).click();
    await page.getByLabel("Name").fill("work laptop");
    await page.getByRole("button", { name: "Save name" }).click();
    await page.waitForURL(/\/keys$/);
    await page.getByText("Key laptop is now called work laptop.").waitFor();
    assert.equal(await page.getByRole("link", { name: "Rename work laptop" }).count(), 1);
    await screenshot("key-renamed");

    await page.getByLabel("Name (the machine or agent it is for)").fill("old laptop");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.waitForURL(/\/keys$/);
    await page.getByRole("link", { name: "Revoke old laptop" }).click();
    await page.getByRole("button", { name: "Revoke key" }).click();
    await page.waitForURL(/\/keys$/);
    const folded = page.locator("details#revoked-keys");
    assert.equal(await folded.locator("summary").textContent(), "Revoked keys (1)");
    assert.equal(await folded.locator("table").isVisible(), false, "folded away");
    assert.equal(await page.locator("#live-keys tbody tr").count(), 1);
    await folded.locator("summary").click();
    assert.match((await folded.locator("table").textContent()) ?? "", /old laptop/);
    await screenshot("keys-revoked-folded");

    await page.getByRole("link", { name: /^Revoke agentpass on / }).click();
    await page.getByRole("button", { name: "Revoke app" }).click();
    await page.waitForURL(/\/keys$/);
    await page.getByText(/^agentpass on .* revoked\.$/).waitFor();
    assert.equal(await page.locator("#connected-apps-table").count(), 0, "gone from the list");
  });

  it("deletes the partner after a confirmation: its key stops verifying and the directory drops it", async () => {
    await page.goto(partnerUrl);
    await page.getByRole("link", { name: "Delete partner…" }).click();
    await screenshot("partner-delete-confirm");
    await page.getByRole("button", { name: "Delete partner" }).click();
    await page.waitForURL(/\/partners$/);
    await page.getByText("Partner Grace's Notes deleted.").waitFor();
    await screenshot("partner-deleted");
    const token = await cli(["token"]);
    const verified = await verify(partnerKey, token.stdout.trim());
    assert.equal(verified.status, 401);
    await page.goto(`${server.url}/directory`);
    assert.doesNotMatch((await page.locator("main").textContent()) ?? "", /Grace's Notes/);
  });

  it("is usable from the keyboard", async () => {
    await page.goto(`${server.url}/keys`);
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), "AgentPass");
    await page.getByLabel("Name (the machine or agent it is for)").focus();
    await page.keyboard.type("keyboard");
    await page.keyboard.press("Enter");
    assert.match((await page.locator("#new-key").textContent()) ?? "", /^apu_/);
  });

  it("shows who is signed in, and a landing page to a visitor, in light and dark", async () => {
    await page.goto(`${server.url}/keys`);
    assert.equal(await page.locator("#signed-in-as").textContent(), "grace.hopper@example.com");
    const visitor = await browser.newPage({ viewport: { width: 1100, height: 800 } });
    try {
      await visitor.goto(`${server.url}/`);
      assert.equal(await visitor.getByRole("heading", { name: "For agents" }).count(), 1);
      assert.equal(await visitor.getByRole("link", { name: "Sign in or sign up" }).count(), 1);
      const background = () =>
        visitor.evaluate(() => getComputedStyle(document.body).backgroundColor);
      const light = await background();
      await visitor.screenshot({ path: join(SHOTS, "20-landing.png"), fullPage: true });
      await visitor.emulateMedia({ colorScheme: "dark" });
      assert.notEqual(await background(), light, "dark mode follows prefers-color-scheme");
      await visitor.screenshot({ path: join(SHOTS, "21-landing-dark.png"), fullPage: true });
    } finally {
      await visitor.close();
    }
  });

  it("deletes the account after a confirmation: the CLI's key stops working", async () => {
    await page.goto(`${server.url}/account`);
    await page.getByRole("link", { name: "Delete account…" }).click();
    await screenshot("delete-confirm");
    await page.getByRole("button", { name: "Delete account" }).click();
    await page.getByText("Your account and all its keys are gone.").waitFor();
    await screenshot("account-deleted");
    const token = await cli(["token", "--fresh"]);
    assert.equal(token.code, 4, "the saved key is rejected");
  });
});
