import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, testEngines } from "@agentpass/db/testing";
import { loadConfig } from "../src/config.ts";
import {
  AUDIT_FOLD_FLUSH_MS,
  AUDIT_FOLD_NETWORKS,
  AUDIT_FOLD_WINDOW_MS,
} from "../src/domain/audit.ts";
import { createLogger } from "../src/infra/logger.ts";
import { openIdentityService } from "../src/service.ts";
import type { StoredAuditEvent } from "../src/store/audit-store.ts";
import { START } from "./support/harness.ts";
import { type Mailbox, type ReceivedMail, startMailbox } from "./support/mailbox.ts";
import { runAdminCli } from "./support/run-cli.ts";
import { type WebClient, webClient } from "./support/web-client.ts";

/** A user agent written to read like AgentPass talking, with C1 terminal controls (CSI) in it. */
const CRAFTED =
  "AgentPass Security: this account is locked. Restore at https://evil.example/1.0 (\u009b2J\u009b31m)";

/** The code of a sign-in mail, however its digits are grouped. */
function codeOf(mail: ReceivedMail): string {
  const code = /code: ([\d ]+)/.exec(mail.subject)?.[1]?.replace(/ /g, "");
  if (!code) throw new Error(`not a sign-in mail: ${mail.subject}`);
  return code;
}

for (const engine of testEngines()) {
  describe(`audit rows strangers cause are bounded (${engine})`, () => {
    let mailbox: Mailbox;
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    let service: Awaited<ReturnType<typeof openIdentityService>>;
    let env: Record<string, string>;
    let now = START;
    const logLines: string[] = [];

    before(async () => {
      mailbox = await startMailbox();
      database = await createTestDatabase(engine);
      env = { DATA_DIR: database.dataDir, DATABASE_URL: database.databaseUrl ?? "" };
      const loaded = loadConfig({ ...env, SMTP_URL: mailbox.url, TRUST_PROXY: "1" });
      if (!loaded.ok) throw new Error(loaded.error);
      service = await openIdentityService(loaded.config, {
        clock: () => now,
        logger: createLogger("info", { write: (line: string) => void logLines.push(line) }),
      });
    });
    after(async () => {
      await service.close();
      await database.drop();
      await mailbox.close();
    });

    const uniqueEmail = () => `person-${crypto.randomUUID()}@example.com`;
    const from = (address: string, userAgent = "curl/8.5.0") => ({
      "user-agent": userAgent,
      "x-forwarded-for": address,
    });

    async function signIn(client: WebClient, email: string) {
      const since = mailbox.mails.length;
      await client.post("/sign-in", { email, next: "/keys" }, from("192.0.2.10"));
      const code = codeOf(await mailbox.next(email, since));
      const signedIn = await client.post("/sign-in/code", { code, next: "/keys" });
      assert.equal(signedIn.status, 303);
    }

    /** A stranger's browser holding an open code for `email`, as the attack starts. */
    async function strangerWithCodeFor(email: string, address: string) {
      const stranger = webClient(service);
      const since = mailbox.mails.length;
      await stranger.post("/sign-in", { email, next: "/keys" }, from(address));
      await mailbox.next(email, since);
      return stranger;
    }

    /** Every stored event about sign-ins with no account (an address nobody holds). */
    const anonymousSignIns = async (): Promise<StoredAuditEvent[]> =>
      (await service.ctx.audit.list({ action: "sign_in", limit: 10_000 })).filter(
        (event) => event.accountId === null,
      );

    it("folds a flood of sign-in posts without an open code into one row, counted", async () => {
      const rowsBefore = (await anonymousSignIns()).length;
      const linesBefore = logLines.length;
      const started = performance.now();
      const flooder = webClient(service);
      let refused = 0;
      let lastRefused = 0;
      const first = now + 10;
      for (let i = 0; i < 200; i++) {
        now += 10;
        const posted = await flooder.post(
          "/sign-in/code",
          { code: "123456", next: "/keys" },
          from("198.51.100.200", `Flood/${i}`),
        );
        // 400: refused and recorded; 429: past the address's budget, refused unread.
        assert.ok([400, 429].includes(posted.status), String(posted.status));
        if (posted.status === 400) {
          refused++;
          lastRefused = now;
        }
      }
      const all = await anonymousSignIns();
      const rows = all.slice(0, all.length - rowsBefore);
      assert.equal(rows.length, 1, "one row for 200 requests");
      const [row] = rows;
      assert.ok(refused > 1);
      assert.equal(row?.occurrences, refused, "every refusal counted");
      assert.equal(row?.clientAddress, "198.51.100.200");
      assert.equal(row?.at, first);
      assert.equal(row?.lastAt, lastRefused, "the last time, the first being `at`");
      const logged = logLines.slice(linesBefore).filter((line) => line.includes('"audit"'));
      // One line for the first refusal, then one per flush of the repeats: at most one a
      // second (AUDIT_FOLD_FLUSH_MS, on the real clock), however many requests.
      const flushes = Math.ceil((performance.now() - started) / AUDIT_FOLD_FLUSH_MS) + 1;
      assert.ok(logged.length <= 1 + flushes, `the log is folded too: ${logged.length} lines`);
    });

    it("keys the fold on the network, so rotating IPv6 addresses of one /48 buys no rows", async () => {
      const rowsBefore = (await anonymousSignIns()).length;
      const flooder = webClient(service);
      for (let i = 1; i <= 50; i++) {
        await flooder.post(
          "/sign-in/code",
          { code: "123456", next: "/keys" },
          from(`2001:db8:77:${i.toString(16)}::1`),
        );
      }
      const rows = await anonymousSignIns();
      assert.equal(rows.length - rowsBefore, 1);
      assert.equal(rows[0]?.occurrences, 50);
      assert.equal(rows[0]?.clientAddress, "2001:db8:77:1::1", "the address, not the /48");
    });

    it("bounds the rows many networks cause about one account, and starts over after the window", async () => {
      const email = uniqueEmail();
      await signIn(webClient(service), email);
      const networks = AUDIT_FOLD_NETWORKS + 3;
      for (let n = 0; n < networks; n++) {
        const stranger = await strangerWithCodeFor(email, `203.0.${100 + n}.9`);
        for (let i = 0; i < 3; i++) {
          await stranger.post(
            "/sign-in/code",
            { code: "000000", next: "/keys" },
            from(`203.0.${100 + n}.9`),
          );
        }
      }
      // Another process (the CLI) sees repeats once the service writes them, within a second.
      await service.ctx.audit.flush();
      const run = await runAdminCli(
        ["audit", "--json", "--account", email, "--action", "sign_in"],
        env,
      );
      const failures = (JSON.parse(run.stdout) as StoredAuditEvent[]).filter(
        (event) => event.outcome === "failure",
      );
      assert.equal(
        failures.length,
        AUDIT_FOLD_NETWORKS + 1,
        "a row per network, then one for the rest",
      );
      const rest = failures.find((event) => event.clientAddress === null);
      assert.equal(rest?.occurrences, 3 * 3);
      assert.equal(rest?.detail?.fromSeveralNetworks, true);

      now += AUDIT_FOLD_WINDOW_MS;
      const late = await strangerWithCodeFor(email, "203.0.100.9");
      await late.post("/sign-in/code", { code: "000000", next: "/keys" }, from("203.0.100.9"));
      const after = await service.ctx.audit.list({ accountId: rest?.accountId ?? "", limit: 100 });
      assert.equal(after[0]?.occurrences, 1, "a new window, a new row");
    });

    it("shows a stranger's failures on the person's page as theirs, grouped, never their text", async () => {
      const email = uniqueEmail();
      const person = webClient(service);
      await signIn(person, email);
      const stranger = await strangerWithCodeFor(email, "198.51.100.44");
      for (let i = 0; i < 4; i++) {
        now += 60_000;
        const tried = await stranger.post(
          "/sign-in/code",
          { code: "000000", next: "/keys" },
          from("198.51.100.44", CRAFTED),
        );
        assert.equal(tried.status, 400);
      }
      const page = await person.text("/account/security");
      assert.doesNotMatch(page, /this account is locked/, "the crafted user agent is not shown");
      assert.doesNotMatch(page, /evil\.example/);
      const attempts = /<table id="sign-in-attempts">[\s\S]*?<\/table>/.exec(page)?.[0] ?? "";
      assert.match(
        attempts,
        /Someone typed a wrong sign-in code for your address, 4 times from 198\.51\.100\.44/,
      );
      assert.match(attempts, /first [^<]* UTC, last [^<]* UTC/);
      assert.match(attempts, /Unknown browser/);

      await service.ctx.audit.flush();
      const cli = await runAdminCli(["audit", "--account", email, "--action", "sign_in"], env);
      assert.equal(cli.code, 0, cli.stderr);
      assert.doesNotMatch(cli.stdout, /(?!\n)\p{Cc}/u, "no control reaches the terminal");
      assert.match(cli.stdout, /\\u009b2J/, "shown escaped, as data");
      assert.match(cli.stdout, /×4/, "the count");
    });

    it("records the client's address, not the limiter's /48 key", async () => {
      const email = uniqueEmail();
      const person = webClient(service);
      const since = mailbox.mails.length;
      await person.post("/sign-in", { email, next: "/keys" }, from("2001:db8:cafe:1::7"));
      const code = codeOf(await mailbox.next(email, since));
      await person.post("/sign-in/code", { code, next: "/keys" }, from("2001:db8:cafe:1::7"));
      const [signedIn] = await service.ctx.audit.list({ action: "sign_in", limit: 1 });
      assert.equal(signedIn?.outcome, "success");
      assert.equal(signedIn?.clientAddress, "2001:db8:cafe:1::7");
    });

    it("keeps a signed-in person's own events one row each", async () => {
      const email = uniqueEmail();
      const person = webClient(service);
      await signIn(person, email);
      for (let i = 0; i < 3; i++) await person.post("/keys", { name: "laptop" });
      const created = await service.ctx.audit.list({ action: "user_key.create", limit: 3 });
      assert.deepEqual(
        created.map((event) => event.occurrences),
        [1, 1, 1],
      );
    });
  });
}
