"""jose, in Node, as the reference for the proofs and keys the package makes by itself."""

from __future__ import annotations

import json
from typing import Any

from services import node_env, run_node

# jose (a dependency of packages/verify, installed at the workspace's root) as the reference.
_SCRIPT = """
import {
  calculateJwkThumbprint, EmbeddedJWK, exportJWK, generateKeyPair, jwtVerify,
} from "jose";
const [command, argument] = process.argv.slice(1);
if (command === "verify") {
  const { payload, protectedHeader } = await jwtVerify(argument, EmbeddedJWK, {
    typ: "dpop+jwt",
    algorithms: ["ES256"],
  });
  const jkt = await calculateJwkThumbprint(protectedHeader.jwk, "sha256");
  console.log(JSON.stringify({ payload, header: protectedHeader, jkt }));
} else {
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = await exportJWK(privateKey);
  console.log(JSON.stringify({ jwk, jkt: await calculateJwkThumbprint(jwk, "sha256") }));
}
"""


def _run(*args: str) -> Any:
    return json.loads(run_node(["--input-type=module", "--eval", _SCRIPT, "--", *args], node_env()))


def verify_with_jose(proof: str) -> dict[str, Any]:
    """jose's reading of a proof (its signature checked with the key in its header): the
    ``payload``, the ``header`` and the key's RFC 7638 thumbprint ``jkt``. Raises when jose
    refuses it."""
    return _run("verify", proof)


def jose_private_jwk() -> tuple[dict[str, Any], str]:
    """A new ES256 key as jose exports it (the CLI's ``dpopKey``), and its thumbprint."""
    made = _run("generate")
    return made["jwk"], made["jkt"]
