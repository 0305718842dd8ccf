import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { browserCommand, serviceUrl } from "../src/device-login.ts";

const BIN = fileURLToPath(new URL("../src/bin.ts", import.meta.url));

const HOSTILE = [
  'https://localhost/device?code=X" & calc.exe',
  "https://evil.example/device?code=ABCD-EFGH",
  "file:///etc/passwd",
  "javascript:alert(1)",
  "http://user:pass@127.0.0.1/device",
  "--help",
  "",
];

describe("agentpass login opens only the service's own login page, never through a shell", () => {
  it("accepts an http(s) URL of the configured service, normalized, and nothing else", () => {
    const service = "http://127.0.0.1:4000";
    assert.equal(
      serviceUrl(service, "http://127.0.0.1:4000/device?code=BCDF-GHJK"),
      "http://127.0.0.1:4000/device?code=BCDF-GHJK",
    );
    for (const candidate of HOSTILE) {
      assert.equal(serviceUrl("https://agentpass.example", candidate), null, candidate);
    }
    assert.equal(
      serviceUrl("https://localhost", 'https://localhost/device?code=X" & calc.exe'),
      "https://localhost/device?code=X%22%20&%20calc.exe",
      "what a shell would read is percent-encoded, and no shell reads it",
    );
    assert.equal(serviceUrl(service, "http://127.0.0.1:4001/device"), null, "another port");
    assert.equal(serviceUrl(service, 42), null);
  });

  it("runs no shell on any platform: the URL is one argument of a program", () => {
    const url = "https://agentpass.example/device?code=BCDF-GHJK&x=1";
    assert.deepEqual(browserCommand(url, "win32"), [
      "rundll32.exe",
      ["url.dll,FileProtocolHandler", url],
    ]);
    assert.deepEqual(browserCommand(url, "darwin"), ["open", [url]]);
    assert.deepEqual(browserCommand(url, "linux", { DISPLAY: ":0" }), ["xdg-open", [url]]);
    assert.equal(browserCommand(url, "linux", {}), null, "no display: only printed");
  });

  describe("against a server that answers hostile links", () => {
    let server: Server;
    let url: string;
    let offered = "";
    let bin: string;

    before(async () => {
      server = createServer((request, response) => {
        response.setHeader("content-type", "application/json");
        if (request.url === "/oauth/device_authorization") {
          response.end(
            JSON.stringify({
              device_code: "d",
              user_code: "BCDF-GHJK\u202e",
              verification_uri: offered,
              expires_in: 600,
              interval: 0,
            }),
          );
        } else {
          response.statusCode = 400;
          response.end(JSON.stringify({ error: "access_denied" }));
        }
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      // A stand-in for the desktop's opener: it writes down the arguments it was given.
      bin = mkdtempSync(join(tmpdir(), "agentpass-opener-"));
      writeFileSync(
        join(bin, "xdg-open"),
        `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done > "${bin}/opened"\n`,
      );
      chmodSync(join(bin, "xdg-open"), 0o755);
    });
    after(() => {
      server.close();
      rmSync(bin, { recursive: true, force: true });
    });

    function login(): Promise<{ code: number; stderr: string }> {
      const home = mkdtempSync(join(tmpdir(), "agentpass-cli-home-"));
      return new Promise((resolve) => {
        execFile(
          process.execPath,
          [BIN, "login"],
          {
            env: {
              PATH: `${bin}:${process.env.PATH}`,
              HOME: home,
              XDG_CONFIG_HOME: join(home, ".config"),
              AGENTPASS_URL: url,
              DISPLAY: ":99",
            },
          },
          (error, _stdout, stderr) => {
            rmSync(home, { recursive: true, force: true });
            resolve({ code: error ? Number(error.code) : 0, stderr });
          },
        );
      });
    }

    /** What the opener was given, once it ran (it is started detached). */
    async function opened(): Promise<string | undefined> {
      // Polled until it appears: a busy machine may take seconds to start the detached opener.
      for (let i = 0; i < 1_500 && !existsSync(join(bin, "opened")); i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return existsSync(join(bin, "opened"))
        ? readFileSync(join(bin, "opened"), "utf8")
        : undefined;
    }

    it("opens a hostile link nowhere: the service's own page instead", async () => {
      for (const hostile of HOSTILE) {
        rmSync(join(bin, "opened"), { force: true });
        offered = hostile;
        const run = await login();
        assert.equal(run.code, 1, "the stand-in server denies the login");
        assert.equal(await opened(), `${url}/device\n`, `opened for ${JSON.stringify(hostile)}`);
        if (hostile) assert.ok(!run.stderr.includes(hostile), "the hostile link is not shown");
        assert.ok(!run.stderr.includes("\u202e"), "no bidi control reaches the terminal");
      }
    });

    it("opens the service's own link as one argument, unchanged", async () => {
      rmSync(join(bin, "opened"), { force: true });
      offered = `${url}/activate?lang=en&from=cli`;
      await login();
      assert.equal(await opened(), `${offered}\n`);
    });
  });
});
