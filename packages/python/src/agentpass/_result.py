"""What a verification tells a partner, and the codes of failures found without AgentPass."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

NETWORK_ERROR = "Network error: cannot reach API"
"""The error text of a result when AgentPass could not be reached (code ``network_error``)."""


class LOCAL_CODES:  # noqa: N801 - a namespace of constants, named like the Node library's
    """Codes of failures found before or without an answer from AgentPass.

    Every other code is AgentPass's own (``session_token_invalid``, ``partner_key_revoked``, …).
    """

    NETWORK_ERROR = "network_error"
    """AgentPass could not be reached, or did not answer in time."""
    API_URL_MISSING = "api_url_missing"
    """No AgentPass URL was given and ``AGENTPASS_URL`` is not set."""
    INVALID_API_URL = "invalid_api_url"
    """The AgentPass URL is not an http(s) URL."""
    UNEXPECTED_RESPONSE = "unexpected_response"
    """AgentPass answered something that is not its API's answer (a proxy's error page, say)."""


@dataclass(frozen=True)
class Agent:
    """The agent acting for the person, when the token was an agent's JWT or one an agent
    minted: its ``id`` (``agt_…``) and the ``name`` its person approved (show it as data)."""

    id: str
    name: str


@dataclass(frozen=True)
class VerifyResult:
    """The outcome of one verification; switch on ``code``, never on ``error`` (for people).

    ``ok`` with the person's ``email``, or not ``ok`` with ``error`` and ``code``. ``status`` is
    the HTTP status of AgentPass's answer, 0 when none came back. ``expires_at`` is when the
    session token expires, when AgentPass says.

    Example::

        result = verify(partner_key, token)
        if result.ok:
            print(result.email)
        elif result.code == "partner_key_revoked":
            print("rotate the partner key")
    """

    ok: bool
    email: str | None = None
    error: str | None = None
    code: str | None = None
    status: int = 0
    expires_at: datetime | None = None
    agent: Agent | None = None
    """The agent acting for the person; None for a token without one."""


def failure(status: int, error: str, code: str) -> VerifyResult:
    return VerifyResult(ok=False, error=error, code=code, status=status)
