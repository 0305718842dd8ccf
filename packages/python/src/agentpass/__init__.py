"""AgentPass for Python: verify agents' session tokens as a partner, mint them as an agent.

Partners: ``verify()``, ``Verifier`` (with ``authorize_capability`` for agents' capabilities),
and the middlewares ``agentpass.asgi.AgentPassMiddleware``
and ``agentpass.wsgi.AgentPassMiddleware``, per route ``agentpass.fastapi.require_email`` and
``agentpass.flask.require_email``. Agents: ``SessionTokens``. For asyncio: ``AsyncVerifier``,
``AsyncSessionTokens``.
"""

from ._authenticate import (
    RETRY_AFTER_SECONDS,
    SESSION_TOKEN_CHALLENGE,
    SESSION_TOKEN_HEADER,
    AuthResult,
    authenticate,
)
from ._asynchronous import AsyncSessionTokens, AsyncVerifier
from ._capabilities import AuthorizeResult
from ._result import LOCAL_CODES, NETWORK_ERROR, Agent, Code, Refused, Verified, VerifyResult
from ._session_tokens import SessionTokenError, SessionTokens
from ._verifier import MAX_CACHE_TTL, Verifier, VerifierFault
from ._verify import verify

__version__ = "0.1.0"

__all__ = [
    "LOCAL_CODES",
    "MAX_CACHE_TTL",
    "NETWORK_ERROR",
    "RETRY_AFTER_SECONDS",
    "Agent",
    "AsyncSessionTokens",
    "AsyncVerifier",
    "AuthorizeResult",
    "SESSION_TOKEN_CHALLENGE",
    "SESSION_TOKEN_HEADER",
    "AuthResult",
    "Code",
    "Refused",
    "Verified",
    "SessionTokenError",
    "SessionTokens",
    "Verifier",
    "VerifierFault",
    "VerifyResult",
    "authenticate",
    "verify",
]
