"""Per-route protection for FastAPI: the person's email as a dependency.

Example::

    from fastapi import Depends, FastAPI
    from agentpass.fastapi import require_email

    app = FastAPI()

    @app.get("/api/me")
    async def me(email: str = Depends(require_email)) -> dict:
        return {"email": email}

Routes without the dependency (``/healthz``, ``/docs``) stay open. The verifier is
``app.state.agentpass_verifier`` when the app sets one (a ``Verifier`` or ``AsyncVerifier``),
else ``Verifier()`` from the environment, made on first use. A refusal is an ``HTTPException``
with AgentPass's status and headers (``WWW-Authenticate``, ``Retry-After``) and the detail
``{"error", "code"}``; the acting agent, when the token names one, is at
``request.state.agentpass_agent``.
"""

from __future__ import annotations

import asyncio
import functools
import threading

from fastapi import HTTPException, Request

from ._asynchronous import AsyncVerifier
from ._authenticate import authenticate
from ._verifier import Verifier

__all__ = ["require_email"]

_default: Verifier | None = None
_default_lock = threading.Lock()


def _verifier_of(request: Request) -> Verifier:
    chosen = getattr(request.app.state, "agentpass_verifier", None)
    if isinstance(chosen, AsyncVerifier):
        return chosen.sync
    if isinstance(chosen, Verifier):
        return chosen
    global _default
    with _default_lock:
        if _default is None:
            _default = Verifier()
        return _default


async def require_email(request: Request) -> str:
    """The verified email of the person whose agent sent the request, or the refusal raised."""
    check = functools.partial(
        authenticate,
        _verifier_of(request),
        request.headers.get("x-session-token"),
        request.headers.get("authorization"),
        dpop_proof=request.headers.get("dpop"),
        method=request.method,
        url=str(request.url.replace(query="")),
    )
    auth = await asyncio.to_thread(check)
    if not auth.ok or auth.email is None:
        raise HTTPException(
            status_code=auth.status,
            detail={"error": auth.error, "code": auth.code},
            headers={
                name: value for name, value in auth.response_headers() if name != "Content-Type"
            },
        )
    if auth.agent is not None:
        request.state.agentpass_agent = auth.agent
    return auth.email
