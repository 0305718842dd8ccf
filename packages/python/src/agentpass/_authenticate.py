"""Authenticating one request: the framework-neutral core of the middlewares."""

from __future__ import annotations

import json
from dataclasses import dataclass
from http import HTTPStatus

from ._verifier import Verifier

SESSION_TOKEN_HEADER = "x-session-token"
"""The header an agent sends its session token in (``Authorization: Bearer`` works too)."""

RETRY_AFTER_SECONDS = 5
"""Seconds a client should wait before retrying when AgentPass is unavailable."""

SESSION_TOKEN_CHALLENGE = f'AgentPass-Session header="{SESSION_TOKEN_HEADER}"'
"""The challenge naming the ``x-session-token`` header; a 400 or 401 sends it after RFC 6750's
Bearer challenge, since the token is taken in either header."""

# RFC 6750's error codes for the Bearer challenge, by the code of the failure.
_BEARER_ERRORS = {"invalid_request": "invalid_request", "session_token_invalid": "invalid_token"}


@dataclass(frozen=True)
class AuthResult:
    """The outcome of authenticating one request, with the answer to give when it fails.

    ``ok`` with ``email``; or not ``ok`` with ``status`` (400, 401 or 503), ``error``, ``code``
    (``invalid_request``, ``session_token_missing``, ``session_token_invalid`` or
    ``identity_unavailable``) and, for ``identity_unavailable``, the ``cause`` to log (the code
    of what failed: ``network_error``, ``partner_key_revoked``, …).
    """

    ok: bool
    email: str | None = None
    status: int = 200
    error: str | None = None
    code: str | None = None
    cause: str | None = None

    def response_headers(self) -> list[tuple[str, str]]:
        """The headers of the failure's answer: JSON; for a 400 or 401 the challenges (RFC 9110
        requires one on a 401), the Bearer one with RFC 6750's ``error`` once a token was sent;
        for a 503 the retry."""
        headers = [("Content-Type", "application/json")]
        if self.status == 503:
            headers.append(("Retry-After", str(RETRY_AFTER_SECONDS)))
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
_TOKEN_REJECTED_CODES = ("session_token_invalid", "session_token_field_invalid")


def read_session_token(x_session_token: str | None, authorization: str | None) -> str | AuthResult:
    """The session token of a request, in ``x-session-token`` or as ``Authorization: Bearer``
    (RFC 6750), or in both with the same value; two different values are a conflict (400), never
    a choice: which one the agent meant is not ours to guess."""
    header = x_session_token or None
    bearer = _bearer_of(authorization)
    if bearer is None:
        return header if header is not None else _MISSING
    if header is not None and header != bearer:
        return _CONFLICT
    return bearer


def authenticate(
    verifier: Verifier, x_session_token: str | None, authorization: str | None = None
) -> AuthResult:
    """Authenticates a request from its two headers' values.

    No token: 401 ``Missing session token``; a token AgentPass rejects: 401 ``Invalid or expired
    session token``; AgentPass unreachable, failing, or refusing your own partner key: 503
    ``Identity service unavailable``, never a 401 (the agent must not re-mint for your outage)
    and never a pass. Two different tokens: 400.

    Example::

        auth = authenticate(verifier, headers.get("x-session-token"), headers.get("authorization"))
        if not auth.ok:
            return Response(auth.response_body(), auth.status, auth.response_headers())
    """
    token = read_session_token(x_session_token, authorization)
    if isinstance(token, AuthResult):
        return token
    result = verifier.verify(token)
    if result.ok:
        return AuthResult(ok=True, email=result.email)
    if result.code in _TOKEN_REJECTED_CODES:
        return _REJECTED
    return AuthResult(
        ok=False,
        status=503,
        error="Identity service unavailable",
        code="identity_unavailable",
        cause=result.code,
    )


def _bearer_of(authorization: str | None) -> str | None:
    """The credential of ``Authorization: Bearer <token>`` (the scheme is case-insensitive, RFC
    9110 section 11.1); None for another scheme or an empty credential."""
    if authorization is None or authorization[:7].lower() != "bearer ":
        return None
    return authorization[7:].strip() or None
