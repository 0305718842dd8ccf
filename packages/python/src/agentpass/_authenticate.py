"""Authenticating one request: the framework-neutral core of the middlewares."""

from __future__ import annotations

from typing import Callable, Iterable

import json
import re
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import urlsplit

from ._result import Agent, Refused, VerifyResult
from ._verifier import Verifier
from ._verify import service_url

SESSION_TOKEN_HEADER = "x-session-token"
"""The header an agent sends its session token in (``Authorization: Bearer`` or ``DPoP`` works
too)."""

RETRY_AFTER_SECONDS = 5
"""Seconds a client should wait before retrying when AgentPass is unavailable."""

SESSION_TOKEN_CHALLENGE = f'AgentPass-Session header="{SESSION_TOKEN_HEADER}"'
"""The challenge naming the ``x-session-token`` header; a 400 or 401 sends it after RFC 6750's
Bearer challenge, since the token is taken in either header."""

# RFC 6750's error codes for the Bearer challenge, by the code of the failure.
_BEARER_ERRORS = {"invalid_request": "invalid_request", "session_token_invalid": "invalid_token"}
# RFC 9449's error codes for the DPoP challenge, by the code of a proof's failure.
_DPOP_ERRORS = {
    "session_token_proof_required": "invalid_token",
    "session_token_proof_invalid": "invalid_dpop_proof",
}
DPOP_ALGORITHMS = "ES256 EdDSA"
"""The proof algorithms AgentPass accepts, as a DPoP challenge's ``algs`` names them."""


@dataclass(frozen=True)
class AuthResult:
    """The outcome of authenticating one request, with the answer to give when it fails.

    ``ok`` with ``email``; or not ``ok`` with ``status`` (400, 401 or 503), ``error``, ``code``
    (``invalid_request``, ``session_token_missing``, ``session_token_invalid``,
    ``session_token_proof_required``, ``session_token_proof_invalid`` or
    ``identity_unavailable``) and, for ``identity_unavailable``, the ``cause`` to log (the code
    of what failed: ``network_error``, ``partner_key_revoked``, …).
    """

    ok: bool
    email: str | None = None
    status: int = 200
    error: str | None = None
    code: str | None = None
    cause: str | None = None
    agent: Agent | None = None
    """The agent acting for the person, when the token names one."""

    def response_headers(self, agent_auth: str | None = None) -> list[tuple[str, str]]:
        """The headers of the failure's answer: JSON; for a 400 or 401 the challenges (RFC 9110
        requires one on a 401), the Bearer one with RFC 6750's ``error`` once a token was sent,
        the DPoP one (RFC 9449) for a proof's failure; for a 503 the retry. With ``agent_auth``
        (AgentPass's URL) a 401 also names its Agent Auth discovery (``AgentAuth discovery=…``)."""
        headers = self._headers()
        if agent_auth and self.status == 401:
            discovery = f"{agent_auth.rstrip('/')}/.well-known/agent-configuration"
            headers = [
                (name, f'{value}, AgentAuth discovery="{discovery}"')
                if name == "WWW-Authenticate"
                else (name, value)
                for name, value in headers
            ]
        return headers

    def _headers(self) -> list[tuple[str, str]]:
        headers = [("Content-Type", "application/json")]
        dpop_error = _DPOP_ERRORS.get(self.code or "")
        if self.status == 503:
            headers.append(("Retry-After", str(RETRY_AFTER_SECONDS)))
        elif dpop_error is not None:
            described = _quotable(self.error or "")
            said = f', error_description="{described}"' if described else ""
            challenge = f'DPoP error="{dpop_error}"{said}, algs="{DPOP_ALGORITHMS}"'
            headers.append(("WWW-Authenticate", challenge))
        elif self.status in (400, 401):
            error = _BEARER_ERRORS.get(self.code or "")
            bearer = f'Bearer error="{error}"' if error else "Bearer"
            headers.append(("WWW-Authenticate", f"{bearer}, {SESSION_TOKEN_CHALLENGE}"))
        return headers

    def response_body(self) -> bytes:
        """The failure's answer, ``{"error": …, "code": …}``."""
        return json.dumps({"error": self.error, "code": self.code}, separators=(",", ":")).encode()

    @property
    def status_line(self) -> str:
        """``401 Unauthorized`` and the like, as WSGI wants it."""
        return f"{self.status} {HTTPStatus(self.status).phrase}"


_CONFLICT = AuthResult(
    ok=False,
    status=400,
    error="Two different session tokens: send one, as Authorization: Bearer or x-session-token",
    code="invalid_request",
)
_MISSING = AuthResult(
    ok=False, status=401, error="Missing session token", code="session_token_missing"
)
_REJECTED = AuthResult(
    ok=False, status=401, error="Invalid or expired session token", code="session_token_invalid"
)
_UNREADABLE_PROOF = AuthResult(
    ok=False,
    status=401,
    error="Invalid DPoP proof: the proof or this request's URL is malformed or too long",
    code="session_token_proof_invalid",
)
_TOKEN_REJECTED_CODES = ("session_token_invalid", "session_token_field_invalid")
_PROOF_REJECTED_CODES = tuple(_DPOP_ERRORS)


@dataclass(frozen=True)
class PresentedToken:
    """The session token a request carries, and whether it came as ``Authorization: DPoP``
    (whose proof then goes to AgentPass with it)."""

    token: str
    dpop: bool = False


def read_session_token(
    x_session_token: str | None, authorization: str | None
) -> PresentedToken | AuthResult:
    """The session token of a request, in ``x-session-token`` or as ``Authorization: Bearer``
    (RFC 6750) or ``DPoP`` (RFC 9449), or in both with the same value; two different values are
    a conflict (400), never a choice: which one the agent meant is not ours to guess."""
    header = x_session_token or None
    credential = _credential_of(authorization)
    if credential is None:
        return PresentedToken(header) if header is not None else _MISSING
    if header is not None and header != credential.token:
        return _CONFLICT
    return credential


def authenticate(
    verifier: Verifier,
    x_session_token: str | None,
    authorization: str | None = None,
    *,
    dpop_proof: str | None = None,
    method: str | None = None,
    url: str | None = None,
) -> AuthResult:
    """Authenticates a request from its headers' values.

    No token: 401 ``Missing session token``; a token AgentPass rejects: 401 ``Invalid or expired
    session token``; AgentPass unreachable, failing, or refusing your own partner key: 503
    ``Identity service unavailable``, never a 401 (the agent must not re-mint for your outage)
    and never a pass. Two different tokens: 400.

    A token sent as ``Authorization: DPoP`` goes to AgentPass with ``dpop_proof`` (the request's
    ``DPoP`` header) and the request's ``method`` and ``url`` (your public base URL and the
    path); a token bound to a key without its proof, or with a proof that fails a check, is 401
    ``session_token_proof_required`` or ``session_token_proof_invalid`` with AgentPass's message.

    Example::

        auth = authenticate(
            verifier,
            headers.get("x-session-token"),
            headers.get("authorization"),
            dpop_proof=headers.get("dpop"),
            method=request.method,
            url=f"https://api.example.com{request.path}",
        )
        if not auth.ok:
            return Response(auth.response_body(), auth.status, auth.response_headers())
    """
    presented = read_session_token(x_session_token, authorization)
    if isinstance(presented, AuthResult):
        return presented
    dpop = None
    if presented.dpop and method is not None and url is not None:
        dpop = {"proof": dpop_proof, "method": method, "url": url}
    result = verifier.verify(presented.token, dpop=dpop)
    if result.ok:
        return AuthResult(ok=True, email=result.email, agent=result.agent)
    if result.code in _TOKEN_REJECTED_CODES:
        return _REJECTED
    if result.code in _PROOF_REJECTED_CODES:
        return AuthResult(ok=False, status=401, error=result.error, code=result.code)
    if result.code == "dpop_field_invalid":  # a proof or URL AgentPass would not even read
        return _UNREADABLE_PROOF
    return AuthResult(
        ok=False,
        status=503,
        error="Identity service unavailable",
        code="identity_unavailable",
        cause=result.code,
    )


def public_base_url(public_url: str | None) -> str | None:
    """A middleware's ``public_url`` checked at start-up: ``scheme://host[:port][/path]``
    without a trailing slash; ``ValueError`` when it is not an http(s) URL without query."""
    if public_url is None:
        return None
    base = service_url(public_url)
    if isinstance(base, Refused) or urlsplit(public_url)[3:] != ("", ""):
        raise ValueError(
            f"agentpass: public_url is not an http(s) URL without query: {public_url!r}"
        )
    return base


def _credential_of(authorization: str | None) -> PresentedToken | None:
    """The credential of ``Authorization: Bearer <token>`` or ``DPoP <token>`` (the scheme is
    case-insensitive, RFC 9110 section 11.1); None for another scheme or an empty credential."""
    scheme, _, credential = (authorization or "").partition(" ")
    token = credential.strip()
    if not token or scheme.lower() not in ("bearer", "dpop"):
        return None
    return PresentedToken(token, dpop=scheme.lower() == "dpop")


def _quotable(text: str) -> str:
    """``text`` in the characters RFC 6750 (section 3) allows in ``error_description``: no ``"``
    or ``\\`` (a double quote becomes a single one), nothing outside printable ASCII."""
    return re.sub(r"[^\x20-\x21\x23-\x5b\x5d-\x7e]", "", text.replace('"', "'"))


def excluded_paths(exclude: Iterable[str]) -> Callable[[str], bool]:
    """Whether a request path is one of ``exclude`` (``"/healthz"``) or under one ending in a
    slash (``"/docs/"``): the middlewares leave those open."""
    exact = tuple(path for path in exclude if not path.endswith("/"))
    prefixes = tuple(path for path in exclude if path.endswith("/"))
    for path in (*exact, *prefixes):
        if not path.startswith("/"):
            raise ValueError(f"agentpass: an excluded path starts with /: {path!r}")

    def excluded(path: str) -> bool:
        return path in exact or (bool(prefixes) and path.startswith(prefixes))

    return excluded
