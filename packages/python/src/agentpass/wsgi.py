"""WSGI middleware (Flask, Django, any WSGI app): the person's email, or a 400/401/503.

Example::

    from flask import Flask, request
    from agentpass.wsgi import AgentPassMiddleware

    app = Flask(__name__)
    app.wsgi_app = AgentPassMiddleware(app.wsgi_app)  # AGENTPASS_PARTNER_KEY, AGENTPASS_URL

    @app.get("/api/me")
    def me() -> dict:
        return {"email": request.environ["agentpass.email"]}
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable

from ._authenticate import authenticate
from ._verifier import Verifier

Environ = Dict[str, Any]
StartResponse = Callable[..., Any]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]

EMAIL_ENVIRON_KEY = "agentpass.email"
"""Where the email goes in the WSGI environ (PEP 3333: a dotted name for an extension)."""


class AgentPassMiddleware:
    """Authenticates every request through AgentPass.

    The session token is read from ``x-session-token`` or ``Authorization: Bearer``. On success
    the person's email is set at ``environ["agentpass.email"]``; otherwise the answer is JSON
    ``{"error", "code"}``: 401 for the agent's token (missing, invalid, expired), 503 with
    ``Retry-After`` when AgentPass is unreachable or refuses your partner key, 400 for two
    different tokens. ``verifier`` defaults to ``Verifier()`` (``AGENTPASS_PARTNER_KEY``,
    ``AGENTPASS_URL``).
    """

    def __init__(self, app: WSGIApp, verifier: Verifier | None = None) -> None:
        self.app = app
        self.verifier = verifier if verifier is not None else Verifier()

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        auth = authenticate(
            self.verifier, environ.get("HTTP_X_SESSION_TOKEN"), environ.get("HTTP_AUTHORIZATION")
        )
        if auth.ok:
            environ[EMAIL_ENVIRON_KEY] = auth.email
            return self.app(environ, start_response)
        body = auth.response_body()
        start_response(
            auth.status_line, [*auth.response_headers(), ("Content-Length", str(len(body)))]
        )
        return [body]
