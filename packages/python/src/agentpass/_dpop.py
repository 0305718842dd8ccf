"""DPoP (RFC 9449): the agent's ES256 key and the proof it signs for each request.

The signing is ``cryptography``'s, an optional dependency (``pip install 'agentpass[dpop]'``),
imported only when a key is made: partners and Bearer agents never need it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey

MISSING_CRYPTOGRAPHY = (
    "agentpass: DPoP needs the cryptography package: pip install 'agentpass[dpop]' "
    "(or pip install cryptography)"
)

_COORDINATE_BYTES = 32  # P-256


class DpopKey:
    """An ES256 (P-256) key pair; its RFC 7638 ``thumbprint`` is what bound tokens name
    (``cnf.jkt``). Made by ``create_dpop_key()`` or ``import_dpop_key(private_jwk)``."""

    def __init__(self, private_key: EllipticCurvePrivateKey) -> None:
        numbers = private_key.public_key().public_numbers()
        self._private_key = private_key
        self.public_jwk: dict[str, str] = {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64url(numbers.x.to_bytes(_COORDINATE_BYTES, "big")),
            "y": _b64url(numbers.y.to_bytes(_COORDINATE_BYTES, "big")),
        }
        # RFC 7638: the required members only, in lexicographic order, without whitespace.
        self.thumbprint = _b64url(hashlib.sha256(_compact_json(self.public_jwk)).digest())

    def proof(
        self,
        method: str,
        url: str,
        *,
        access_token: str | None = None,
        nonce: str | None = None,
        now: Callable[[], float] = time.time,
    ) -> str:
        """A fresh proof (a new ``jti``) for one request: ``htm`` the method, ``htu`` the URL
        without query and fragment, ``ath`` binding it to ``access_token`` when one goes with
        it, ``nonce`` the server's when it demands one."""
        header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": self.public_jwk}
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": _htu(url),
            "iat": int(now()),
        }
        if access_token is not None:
            claims["ath"] = _b64url(hashlib.sha256(access_token.encode()).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        signing_input = f"{_b64url(_compact_json(header))}.{_b64url(_compact_json(claims))}"
        return f"{signing_input}.{_b64url(self._sign(signing_input.encode()))}"

    def _sign(self, data: bytes) -> bytes:
        """ECDSA P-256 with SHA-256 as JWS wants it (RFC 7518 section 3.4): r and s as two
        32-byte big-endian integers, not the DER that ``cryptography`` returns."""
        ec, hashes, decode_dss_signature = _ecdsa()
        r, s = decode_dss_signature(self._private_key.sign(data, ec.ECDSA(hashes.SHA256())))
        signature: bytes = r.to_bytes(_COORDINATE_BYTES, "big") + s.to_bytes(_COORDINATE_BYTES, "big")
        return signature


def create_dpop_key() -> DpopKey:
    """A new ES256 key, held in memory only. Raises ``ImportError`` without ``cryptography``."""
    ec, _, _ = _ecdsa()
    return DpopKey(ec.generate_private_key(ec.SECP256R1()))


def import_dpop_key(private_jwk: Mapping[str, Any]) -> DpopKey:
    """The key of a private P-256 JWK (``kty``, ``crv``, ``x``, ``y``, ``d``), such as the
    ``dpopKey`` the ``agentpass`` command line saves. ``ValueError`` for anything else, or when
    ``x`` and ``y`` are not the public half of ``d``; ``ImportError`` without ``cryptography``."""
    ec, _, _ = _ecdsa()
    if private_jwk.get("kty") != "EC" or private_jwk.get("crv") != "P-256":
        raise ValueError("not a P-256 key (kty EC, crv P-256)")
    if private_jwk.get("alg", "ES256") != "ES256":
        raise ValueError("not an ES256 key")
    d = _b64url_int(private_jwk.get("d"))
    try:
        key = DpopKey(ec.derive_private_key(d, ec.SECP256R1()))
    except ValueError as invalid:
        raise ValueError("d is not a P-256 private key") from invalid
    if any(key.public_jwk[name] != private_jwk.get(name) for name in ("x", "y")):
        raise ValueError("x and y are not the public key of d")
    return key


def _htu(url: str) -> str:
    """RFC 9449 section 4.2: the target URI without query and fragment."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", "", ""))


def _ecdsa() -> tuple[Any, Any, Any]:
    """``cryptography``'s modules for ECDSA, imported on first use."""
    try:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    except ImportError as missing:
        raise ImportError(MISSING_CRYPTOGRAPHY) from missing
    return ec, hashes, decode_dss_signature


def _compact_json(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64url_int(value: object) -> int:
    if not isinstance(value, str) or not value:
        raise ValueError("d is missing")
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except ValueError as invalid:
        raise ValueError("d is not base64url") from invalid
    if len(raw) != _COORDINATE_BYTES:
        raise ValueError("d is not 32 bytes")
    return int.from_bytes(raw, "big")
