import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { z } from "zod";
import { findMisspelt, isLocalDevelopment, readEnvironment, urlSetting } from "../src/env-check.ts";

const KNOWN = ["PORT", "HOST", "DATABASE_URL", "LOG_LEVEL", "AGENTPASS_SECRET_FILE"];

describe("findMisspelt", () => {
  it("names a name within two edits of a long setting: added, dropped, changed or swapped letters", () => {
    for (const [name, meant] of [
      ["DATABSE_URL", "DATABASE_URL"],
      ["DATABASE_URLL", "DATABASE_URL"],
      ["DATABASE_UR", "DATABASE_URL"],
      ["DATEBASE_URL", "DATABASE_URL"],
      ["DATABSAE_URL", "DATABASE_URL"],
      ["DTABASE_UR", "DATABASE_URL"],
      ["LOGLEVEL", "LOG_LEVEL"],
      ["AGENTPASS_SECRET_FIEL", "AGENTPASS_SECRET_FILE"],
    ] as const) {
      assert.deepEqual(findMisspelt([name], KNOWN), [`${name}: did you mean ${meant}?`]);
    }
  });

  it("leaves a name three edits away alone", () => {
    assert.deepEqual(findMisspelt(["DTABSE_UR", "DATABASE_URL_X_Y"], KNOWN), []);
  });

  it("takes only one same-length edit for a short setting, so PGPORT and PORT0 are not PORT", () => {
    assert.deepEqual(findMisspelt(["POTR", "HOTS", "PIRT"], KNOWN), [
      "POTR: did you mean PORT?",
      "HOTS: did you mean HOST?",
      "PIRT: did you mean PORT?",
    ]);
    assert.deepEqual(
      findMisspelt(["PGPORT", "PGHOST", "PORT0", "PORTS", "GHOST", "POST_"], KNOWN),
      [],
    );
  });

  it("names a setting in other letter case, and judges no other name that is not in capitals", () => {
    assert.deepEqual(findMisspelt(["database_url", "Log_Level"], KNOWN), [
      "database_url: did you mean DATABASE_URL?",
      "Log_Level: did you mean LOG_LEVEL?",
    ]);
    assert.deepEqual(findMisspelt(["databse_url", "npm_config_port", "Path"], KNOWN), []);
  });
});

describe("readEnvironment", () => {
  const schema = z.object({ PORT: z.coerce.number().default(4000) });

  it("counts an empty variable as unset", () => {
    const read = readEnvironment(schema, { PORT: "" }, []);
    assert.deepEqual(read, { ok: true, values: { PORT: 4000 }, warnings: [] });
  });

  it("names the first invalid variable, not its value", () => {
    assert.deepEqual(readEnvironment(schema, { PORT: "eighty" }, []), {
      ok: false,
      error: "Invalid PORT: Invalid input: expected number, received NaN",
    });
  });
});

describe("urlSetting", () => {
  const smtp = urlSetting(["smtp", "smtps"], "must be an smtp:// URL");

  it("takes a URL of its schemes that parses, and nothing else", () => {
    for (const url of ["smtp://mail", "smtps://u:p%40ss@mail.example:465", "smtp://[::1]:25"]) {
      assert.ok(smtp.safeParse(url).success, url);
    }
    for (const url of ["smtp://mail:port", "smtp://[::1", "SMTP://mail", "smtp:mail", "http://x"]) {
      assert.equal(smtp.safeParse(url).success, false, url);
    }
  });
});

describe("isLocalDevelopment", () => {
  it("is plain http on a loopback host, served on loopback only", () => {
    for (const url of [
      "http://localhost:4000",
      "http://app.localhost",
      "http://127.0.0.2",
      "http://[::1]:1",
    ]) {
      assert.equal(isLocalDevelopment(url, ["127.0.0.1", "::1"]), true, url);
    }
    for (const url of ["https://localhost", "http://10.0.0.5", "http://agentpass.example", "x"]) {
      assert.equal(isLocalDevelopment(url, ["127.0.0.1", "::1"]), false, url);
    }
  });

  it("is never a listener that answers the network, whatever PUBLIC_URL says", () => {
    for (const host of [
      "127.0.0.1",
      "::1",
      "[::1]",
      "localhost",
      "127.0.0.5",
      "::ffff:127.0.0.1",
    ]) {
      assert.equal(isLocalDevelopment("http://localhost:4000", host), true, host);
    }
    for (const host of [
      undefined,
      "0.0.0.0",
      "::",
      "192.168.1.20",
      "10.0.0.5",
      "fd00::1",
      ["127.0.0.1", "0.0.0.0"],
      [],
    ]) {
      assert.equal(isLocalDevelopment("http://localhost:4000", host), false, String(host));
    }
  });
});
