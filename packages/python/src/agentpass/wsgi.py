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
from urllib.parse import quote

from ._authenticate import authenticate, excluded_paths, public_base_url
from ._verifier import Verifier

Environ = Dict[str, Any]
StartResponse = Callable[..., Any]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]

EMAIL_ENVIRON_KEY = "agentpass.email"
AGENT_ENVIRON_KEY = "agentpass.agent"
"""Where the middleware puts the acting agent (``agentpass.Agent``), when the token names one."""
"""Where the email goes in the WSGI environ (PEP 3333: a dotted name for an extension)."""


class AgentPassMiddleware:
    """Authenticates every request through AgentPass.

    The session token is read from ``x-session-token``, ``Authorization: Bearer`` or
    ``Authorization: DPoP``; with DPoP its ``DPoP`` proof goes to AgentPass with the request's
    method and URL. On success the person's email is set at ``environ["agentpass.email"]``;
    otherwise the answer is JSON ``{"error", "code"}``: 401 for the agent's token (missing,
    invalid, expired, bound to a key but without its proof or with a proof that fails), 503
    with ``Retry-After`` when AgentPass is unreachable or refuses your partner key, 400 for two
    different tokens. ``verifier`` defaults to ``Verifier()`` (``AGENTPASS_PARTNER_KEY``,
    ``AGENTPASS_URL``). ``public_url`` is your public base URL (``https://api.example.com``)
    behind a proxy, where the request's own scheme and host are not the ones the agent called.
    ``exclude`` names paths left open (``("/healthz",)``; one ending in ``/`` covers what is
    under it). To protect some routes only, use ``agentpass.flask.require_email`` instead.
    """

    def __init__(
        self,
        app: WSGIApp,
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

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        if self.is_excluded(environ.get("PATH_INFO", "")):
            return self.app(environ, start_response)
        auth = authenticate(
            self.verifier,
            environ.get("HTTP_X_SESSION_TOKEN"),
            environ.get("HTTP_AUTHORIZATION"),
            dpop_proof=environ.get("HTTP_DPOP"),
            method=environ.get("REQUEST_METHOD", "GET"),
            url=(self.public_url or _origin_of(environ)) + _path_of(environ),
        )
        if auth.ok:
            environ[EMAIL_ENVIRON_KEY] = auth.email
            if auth.agent is not None:
                environ[AGENT_ENVIRON_KEY] = auth.agent
            return self.app(environ, start_response)
        body = auth.response_body()
        headers = auth.response_headers(self.agent_auth_challenge)
        start_response(auth.status_line, [*headers, ("Content-Length", str(len(body)))])
        return [body]


def _origin_of(environ: Environ) -> str:
    """``scheme://host`` of the request as the agent addressed it (PEP 3333's reconstruction)."""
    host = environ.get("HTTP_HOST")
    if not host:
        scheme, port = environ["wsgi.url_scheme"], environ.get("SERVER_PORT", "")
        default = {"http": "80", "https": "443"}.get(scheme)
        host = environ.get("SERVER_NAME", "localhost") + (f":{port}" if port != default else "")
    return f"{environ['wsgi.url_scheme']}://{host}"


# RFC 3986's pchar, less the percent sign: what a path carries as it is.
_PATH_SAFE = "/:@!$&'()*+,;=~"


def _path_of(environ: Environ) -> str:
    """The request's path percent-encoded again, as the agent sent it (WSGI decodes it)."""
    path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
    try:
        raw = path.encode("latin-1")  # PEP 3333: the bytes as sent, one character each
    except UnicodeEncodeError:  # a server that decoded them as UTF-8 after all
        raw = path.encode("utf-8")
    return quote(raw, safe=_PATH_SAFE) or "/"
