"""Agents (the Agent Auth Protocol): the JWT an agent saved by ``agentpass agents add`` signs.

An agent has an Ed25519 key of its own under its host (the command line's saved login); a
60-second ``agent+jwt`` signed with it proves which agent mints a session token. The signing is
``cryptography``'s (``pip install 'agentpass[dpop]'``), imported only when an agent is used.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from typing import Any, Callable, Mapping

from ._dpop import MISSING_CRYPTOGRAPHY


class AgentKeyError(ValueError):
    """A saved key that is not an Ed25519 private JWK."""


def thumbprint(public_jwk: Mapping[str, Any]) -> str:
    """RFC 7638: the SHA-256 of the key's required members, in order, base64url."""
    canonical = json.dumps(
        {"crv": public_jwk["crv"], "kty": public_jwk["kty"], "x": public_jwk["x"]},
        separators=(",", ":"),
    )
    return _b64url(hashlib.sha256(canonical.encode()).digest())


def agent_jwt(
    agent_key: Mapping[str, Any],
    host_key: Mapping[str, Any],
    agent_id: str,
    audience: str,
    now: Callable[[], float] = time.time,
) -> str:
    """An agent's JWT (section 4.3): ``iss`` its host key's thumbprint, ``sub`` its id, ``aud``
    ``audience``, living 60 seconds, with a fresh ``jti``; signed with EdDSA by ``agent_key``."""
    signer = _ed25519_private_key(agent_key)
    issued = int(now())
    header = {"typ": "agent+jwt", "alg": "EdDSA"}
    claims = {
        "iss": thumbprint(_public_of(host_key)),
        "sub": agent_id,
        "aud": audience,
        "iat": issued,
        "exp": issued + 60,
        "jti": secrets.token_urlsafe(16),
    }
    signed = f"{_b64json(header)}.{_b64json(claims)}"
    return f"{signed}.{_b64url(signer.sign(signed.encode()))}"


def _ed25519_private_key(jwk: Mapping[str, Any]) -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    except ImportError as missing:  # pragma: no cover - depends on the environment
        raise ImportError(MISSING_CRYPTOGRAPHY) from missing
    d = jwk.get("d")
    if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519" or not isinstance(d, str):
        raise AgentKeyError("not an Ed25519 private JWK")
    try:
        return Ed25519PrivateKey.from_private_bytes(_unb64url(d))
    except ValueError as invalid:
        raise AgentKeyError(str(invalid)) from invalid


def _public_of(jwk: Mapping[str, Any]) -> dict[str, Any]:
    if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519" or not isinstance(jwk.get("x"), str):
        raise AgentKeyError("not an Ed25519 JWK")
    return {"kty": "OKP", "crv": "Ed25519", "x": jwk["x"]}


def _b64json(value: object) -> str:
    return _b64url(json.dumps(value, separators=(",", ":")).encode())


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
