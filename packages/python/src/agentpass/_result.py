"""What a verification tells a partner, and the codes of failures found without AgentPass."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal, Union, get_args

NETWORK_ERROR = "Network error: cannot reach API"
"""The error text of a result when AgentPass could not be reached (code ``network_error``)."""


class LOCAL_CODES:  # noqa: N801 - a namespace of constants, named like the Node library's
    """Codes of failures found before or without an answer from AgentPass.

    Every other code is AgentPass's own (``session_token_invalid``, ``partner_key_revoked``, …).
    """

    NETWORK_ERROR: Final = "network_error"
    """AgentPass could not be reached, or did not answer in time."""
    API_URL_MISSING: Final = "api_url_missing"
    """No AgentPass URL was given and ``AGENTPASS_URL`` is not set."""
    INVALID_API_URL: Final = "invalid_api_url"
    """The AgentPass URL is not an http(s) URL."""
    UNEXPECTED_RESPONSE: Final = "unexpected_response"
    """AgentPass answered something that is not its API's answer (a proxy's error page, say)."""


@dataclass(frozen=True)
class Agent:
    """The agent acting for the person, when the token was an agent's JWT or one an agent
    minted: its ``id`` (``agt_…``) and the ``name`` its person approved (show it as data)."""

    id: str
    name: str


Code = Literal[
    "network_error",
    "api_url_missing",
    "invalid_api_url",
    "unexpected_response",
    "invalid_json_body",
    "session_token_field_invalid",
    "dpop_field_invalid",
    "body_too_large",
    "body_incomplete",
    "partner_key_missing_or_invalid",
    "partner_key_missing",
    "partner_key_invalid",
    "partner_key_revoked",
    "session_token_invalid",
    "session_token_proof_required",
    "session_token_proof_invalid",
    "rate_limited",
    "internal_error",
    "unavailable",
]
"""Every code a failed verification has: the library's own (``LOCAL_CODES``) and AgentPass's.
A code this release does not know (a newer AgentPass's) comes as ``unexpected_response``."""

CODES: frozenset[str] = frozenset(get_args(Code))


@dataclass(frozen=True)
class Verified:
    """A verification that succeeded: ``email`` is the person's (a ``str``, never None).

    ``status`` is 200; ``expires_at`` is when the session token expires, when AgentPass says;
    ``agent`` the agent acting for the person, None for a token without one.
    """

    email: str
    status: int = 200
    expires_at: datetime | None = None
    agent: Agent | None = None
    ok: Literal[True] = True
    error: None = None
    code: None = None


@dataclass(frozen=True)
class Refused:
    """A verification that failed: switch on ``code`` (a ``Code``), never on ``error`` (for
    people). ``status`` is AgentPass's HTTP status, 0 when no answer came back."""

    error: str
    code: Code
    status: int = 0
    ok: Literal[False] = False
    email: None = None
    expires_at: None = None
    agent: None = None


VerifyResult = Union[Verified, Refused]
"""The outcome of one verification. ``if result.ok:`` narrows it: ``result.email`` is then a
``str``; otherwise ``result.code`` is a ``Code``, so a misspelt code is a type error.

Example::

    result = verify(partner_key, token)
    if result.ok:
        print(result.email)
    elif result.code == "partner_key_revoked":
        print("rotate the partner key")
"""


def failure(status: int, error: str, code: str) -> Refused:
    known: Code = code if code in CODES else "unexpected_response"  # type: ignore[assignment]
    return Refused(error=error, code=known, status=status)
