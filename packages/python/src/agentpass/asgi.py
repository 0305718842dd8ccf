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
import functools
from typing import Any, Awaitable, Callable, Iterable, MutableMapping
from urllib.parse import quote

from ._authenticate import authenticate, excluded_paths, public_base_url
from ._verifier import Verifier

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

EMAIL_STATE_KEY = "agentpass_email"
AGENT_STATE_KEY = "agentpass_agent"
"""Where the middleware puts the acting agent (``agentpass.Agent``), when the token names one."""
"""Where the email goes in ``scope["state"]``: ``request.state.agentpass_email`` in Starlette."""

# RFC 6455's "policy violation": a WebSocket handshake without a valid token is closed with it.
_WEBSOCKET_POLICY_VIOLATION = 1008


class AgentPassMiddleware:
    """Authenticates every HTTP and WebSocket request through AgentPass.

    The session token is read from ``x-session-token``, ``Authorization: Bearer`` or
    ``Authorization: DPoP``; with DPoP its ``DPoP`` proof goes to AgentPass with the request's
    method and URL. On success the person's email is set at
    ``scope["state"]["agentpass_email"]``; otherwise the answer is JSON ``{"error", "code"}``:
    401 for the agent's token (missing, invalid, expired, bound to a key but without its proof
    or with a proof that fails), 503 with ``Retry-After`` when AgentPass is unreachable or
    refuses your partner key, 400 for two different tokens. ``verifier`` defaults to
    ``Verifier()`` (``AGENTPASS_PARTNER_KEY``, ``AGENTPASS_URL``). ``public_url`` is your
    public base URL (``https://api.example.com``) behind a proxy, where the request's own
    scheme and host are not the ones the agent called. ``exclude`` names paths left open
    (``("/healthz", "/docs", "/openapi.json")``; one ending in ``/`` covers what is under it).
    Verification runs in a worker thread, off the event loop (asyncio). To protect some routes
    only, use ``agentpass.fastapi.require_email`` instead.
    """

    def __init__(
        self,
        app: ASGIApp,
        verifier: Verifier | None = None,
        *,
        public_url: str | None = None,
        agent_auth_challenge: str | None = None,
        exclude: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.verifier: Verifier = verifier if verifier is not None else Verifier()
        self.public_url: str | None = public_base_url(public_url)
        # AgentPass's URL: every 401 then names its Agent Auth discovery beside Bearer.
        self.agent_auth_challenge = agent_auth_challenge
        # Paths left open (`/healthz`, `/docs/`): the request goes through unauthenticated.
        self.is_excluded: Callable[[str], bool] = excluded_paths(exclude)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.is_excluded(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        headers = _headers_of(scope)
        check = functools.partial(
            authenticate,
            self.verifier,
            headers.get("x-session-token"),
            headers.get("authorization"),
            dpop_proof=headers.get("dpop"),
            method=scope.get("method", "GET"),
            url=(self.public_url or _origin_of(scope, headers)) + _path_of(scope),
        )
        auth = await asyncio.get_running_loop().run_in_executor(None, check)
        if auth.ok:
            # A copy: the state of this request only, whatever the server shares between them.
            state: dict[str, Any] = {**scope.get("state", {}), EMAIL_STATE_KEY: auth.email}
            if auth.agent is not None:
                state[AGENT_STATE_KEY] = auth.agent
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
                        for name, value in auth.response_headers(self.agent_auth_challenge)
                    ],
                }
            )
            await send({"type": "http.response.body", "body": auth.response_body()})


# A WebSocket opens with an HTTP GET: its proof names the http(s) URL of that request.
_HTTP_SCHEMES = {"ws": "http", "wss": "https"}


def _origin_of(scope: Scope, headers: dict[str, str]) -> str:
    """``scheme://host`` of the request as the agent addressed it (its ``Host`` header)."""
    scheme = scope.get("scheme", "http")
    server = scope.get("server") or ("localhost", None)
    host = headers.get("host") or (f"{server[0]}:{server[1]}" if server[1] else server[0])
    return f"{_HTTP_SCHEMES.get(scheme, scheme)}://{host}"


def _path_of(scope: Scope) -> str:
    """The request's path as sent (percent-encoded), without its query."""
    raw = scope.get("raw_path")
    if isinstance(raw, bytes) and raw:
        return raw.decode("latin-1").split("?", 1)[0]
    return quote(scope.get("path", "/"))


def _headers_of(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name, the first of each (ASGI sends them lowered)."""
    headers: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return headers
