import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { escapeControls, terminalText } from "../src/terminal-text.ts";

describe("text for a terminal", () => {
  it("escapes C0, DEL, C1 and bidi controls as \\u escapes, and nothing else", () => {
    assert.equal(escapeControls("a\u001b[2Jb"), "a\\u001b[2Jb");
    assert.equal(escapeControls("\u009b31m red"), "\\u009b31m red", "C1 CSI, one character");
    assert.equal(escapeControls("\u0085\u007f\u0000"), "\\u0085\\u007f\\u0000");
    assert.equal(escapeControls("key\u202egnp.exe"), "key\\u202egnp.exe");
    assert.equal(escapeControls("Zoë 名前 ok"), "Zoë 名前 ok");
  });

  it("keeps a command's lines, and JSON equal to what it was", () => {
    assert.equal(terminalText("one\u0007\ntwo"), "one\\u0007\ntwo");
    const json = JSON.stringify({ userAgent: "x\u009by\u202e" });
    assert.deepEqual(JSON.parse(terminalText(json)), JSON.parse(json));
    assert.doesNotMatch(terminalText(json), /\p{Cc}|\u202e/u);
  });
});
