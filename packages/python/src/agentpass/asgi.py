"""ASGI middleware (FastAPI, Starlette, any ASGI app): the person's email, or a 400/401/503.

Example::

    from fastapi import FastAPI, Request
    from agentpass.asgi import AgentPassMiddleware

    app = FastAPI()
    app.add_middleware(AgentPassMiddleware)  # AGENTPASS_PARTNER_KEY, AGENTPASS_URL

    @app.get("/api/me")
    def me(request: Request) -> dict:
        return {"email": request.state.agentpass_email}
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, MutableMapping

from ._authenticate import authenticate
from ._verifier import Verifier

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

EMAIL_STATE_KEY = "agentpass_email"
"""Where the email goes in ``scope["state"]``: ``request.state.agentpass_email`` in Starlette."""

# RFC 6455's "policy violation": a WebSocket handshake without a valid token is closed with it.
_WEBSOCKET_POLICY_VIOLATION = 1008


class AgentPassMiddleware:
    """Authenticates every HTTP and WebSocket request through AgentPass.

    The session token is read from ``x-session-token`` or ``Authorization: Bearer``. On success
    the person's email is set at ``scope["state"]["agentpass_email"]``; otherwise the answer is
    JSON ``{"error", "code"}``: 401 for the agent's token (missing, invalid, expired), 503 with
    ``Retry-After`` when AgentPass is unreachable or refuses your partner key, 400 for two
    different tokens. ``verifier`` defaults to ``Verifier()`` (``AGENTPASS_PARTNER_KEY``,
    ``AGENTPASS_URL``). Verification runs in a worker thread, off the event loop (asyncio).
    """

    def __init__(self, app: ASGIApp, verifier: Verifier | None = None) -> None:
        self.app = app
        self.verifier = verifier if verifier is not None else Verifier()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers_of(scope)
        auth = await asyncio.get_running_loop().run_in_executor(
            None,
            authenticate,
            self.verifier,
            headers.get("x-session-token"),
            headers.get("authorization"),
        )
        if auth.ok:
            # A copy: the state of this request only, whatever the server shares between them.
            state = {**scope.get("state", {}), EMAIL_STATE_KEY: auth.email}
            await self.app({**scope, "state": state}, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": _WEBSOCKET_POLICY_VIOLATION})
        else:
            await send(
                {
                    "type": "http.response.start",
                    "status": auth.status,
                    "headers": [
                        (name.lower().encode("latin-1"), value.encode("latin-1"))
                        for name, value in auth.response_headers()
                    ],
                }
            )
            await send({"type": "http.response.body", "body": auth.response_body()})


def _headers_of(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name, the first of each (ASGI sends them lowered)."""
    headers: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return headers
