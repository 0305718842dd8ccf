"""Per-route protection for Flask: a decorator that puts the person's email in ``flask.g``.

Example::

    from flask import Flask, g
    from agentpass.flask import require_email

    app = Flask(__name__)

    @app.get("/api/me")
    @require_email
    def me() -> dict:
        return {"email": g.agentpass_email}

Routes without the decorator (``/healthz``) stay open. The verifier is
``app.extensions["agentpass"]`` when the app sets one (a ``Verifier``), else ``Verifier()``
from the environment, made on first use. A refusal is answered as the middleware answers it:
JSON ``{"error", "code"}`` with AgentPass's status and headers. The acting agent, when the
token names one, is ``g.agentpass_agent`` (else None).
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar, cast

from flask import Response, current_app, g, request

from ._authenticate import authenticate
from ._verifier import Verifier

__all__ = ["require_email"]

F = TypeVar("F", bound=Callable[..., Any])

_default: Verifier | None = None
_default_lock = threading.Lock()


def _verifier() -> Verifier:
    chosen = current_app.extensions.get("agentpass")
    if isinstance(chosen, Verifier):
        return chosen
    global _default
    with _default_lock:
        if _default is None:
            _default = Verifier()
        return _default


def require_email(view: F) -> F:
    """Answers the request only when AgentPass verifies its session token; the view then reads
    ``g.agentpass_email``."""

    @functools.wraps(view)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        auth = authenticate(
            _verifier(),
            request.headers.get("x-session-token"),
            request.headers.get("authorization"),
            dpop_proof=request.headers.get("dpop"),
            method=request.method,
            url=request.base_url,
        )
        if not auth.ok:
            return Response(
                auth.response_body(),
                status=auth.status,
                headers=auth.response_headers(),
            )
        g.agentpass_email = auth.email
        g.agentpass_agent = auth.agent
        return view(*args, **kwargs)

    return cast(F, guarded)
