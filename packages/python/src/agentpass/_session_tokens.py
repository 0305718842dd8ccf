"""``SessionTokens``: the agent's side, session tokens minted from the person's user key."""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Callable, Generator
from urllib.parse import urlencode

from ._cli_profile import saved_profiles
from ._post import NoAnswer, post_to_agentpass
from ._result import NETWORK_ERROR
from ._verify import service_url

if TYPE_CHECKING:
    import httpx
    import requests

CLIENT_ID = "agentpass-cli"
"""The OAuth client the command line's user keys are issued to; a refresh names it."""

REUSE_MARGIN = 60.0
"""A token is reused until this many seconds before its expiry, then a fresh one is minted."""


class SessionTokenError(Exception):
    """No session token could be had. ``code`` says why, for programs: ``no_url``,
    ``no_user_key`` (nothing configured), ``invalid_url``, ``key_rejected`` (the user key is
    unknown or revoked: log in again), ``unknown_resource`` (no partner registered
    ``resource``), ``rate_limited`` (``retry_after`` seconds), ``network_error``,
    ``unexpected_response``.
    """

    def __init__(self, code: str, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.retry_after = retry_after


class SessionTokens:
    """Session tokens for an agent, minted from the person's user key and reused while fresh.

    ``url`` defaults to ``AGENTPASS_URL``, else to the one server the ``agentpass`` command
    line is logged in to. ``user_key`` defaults to ``AGENTPASS_USER_KEY``, else to the key the
    command line saved for that server. ``resource`` binds every token to the partner that
    registered that URL (RFC 8707), so that no other partner can replay it there (the notes
    API's ``/mcp`` takes only such tokens). A token is minted with the OAuth refresh grant
    (``POST /oauth/token``) and reused until 60 seconds before its expiry. ``now`` is a
    monotonic clock in seconds, for tests. Raises ``SessionTokenError`` when nothing is
    configured; thread-safe.

    Example::

        import httpx
        from agentpass import SessionTokens

        tokens = SessionTokens()  # AGENTPASS_URL and AGENTPASS_USER_KEY, or `agentpass login`
        notes = httpx.get(f"{notes_url}/api/notes", auth=tokens.httpx_auth()).json()
    """

    def __init__(
        self,
        url: str | None = None,
        user_key: str | None = None,
        *,
        resource: str | None = None,
        timeout: float = 10.0,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        saved = saved_profiles()
        self.url = _resolve_url(url, saved)
        key = user_key or os.environ.get("AGENTPASS_USER_KEY") or saved.get(self.url)
        if not key:
            raise SessionTokenError(
                "no_user_key",
                f"No user key for {self.url}: pass user_key, set AGENTPASS_USER_KEY, "
                "or run: agentpass login",
            )
        self._user_key = key
        self.resource = resource
        self._timeout = timeout
        self._now = now
        self._lock = threading.Lock()
        self._token: str | None = None
        self._fresh_until = 0.0

    def token(self) -> str:
        """A session token with more than 60 seconds left: the last one, or a fresh one."""
        with self._lock:
            asked = self._now()
            if self._token is None or asked >= self._fresh_until:
                self._token, lifetime = self._mint()
                # AgentPass answered after `asked`: the token lives at least `lifetime` from it.
                self._fresh_until = asked + lifetime - REUSE_MARGIN
            return self._token

    def requests_auth(self) -> requests.auth.AuthBase:
        """An auth object for ``requests``: every request carries ``Authorization: Bearer``."""
        import requests.auth  # lazily: requests is the caller's choice, not our dependency

        tokens = self

        class _SessionTokenAuth(requests.auth.AuthBase):
            def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
                request.headers["Authorization"] = f"Bearer {tokens.token()}"
                return request

        return _SessionTokenAuth()

    def httpx_auth(self) -> httpx.Auth:
        """An auth object for ``httpx`` (``Client`` and ``AsyncClient``; minting blocks briefly,
        once every few minutes): every request carries ``Authorization: Bearer``."""
        import httpx  # lazily: httpx is the caller's choice, not our dependency

        tokens = self

        class _SessionTokenAuth(httpx.Auth):
            def auth_flow(
                self, request: httpx.Request
            ) -> Generator[httpx.Request, httpx.Response, None]:
                request.headers["Authorization"] = f"Bearer {tokens.token()}"
                yield request

        return _SessionTokenAuth()

    def _mint(self) -> tuple[str, float]:
        """``POST /oauth/token`` with the refresh grant (the user key is the refresh token)."""
        form = {
            "grant_type": "refresh_token",
            "refresh_token": self._user_key,
            "client_id": CLIENT_ID,
        }
        if self.resource is not None:
            form["resource"] = self.resource
        answer = post_to_agentpass(
            f"{self.url}/oauth/token",
            content_type="application/x-www-form-urlencoded",
            data=urlencode(form).encode(),
            timeout=self._timeout,
        )
        if isinstance(answer, NoAnswer):
            raise SessionTokenError(
                "network_error", f"{NETWORK_ERROR} ({self.url}: {answer.reason})"
            )
        body = answer.body or {}
        token, lifetime = body.get("access_token"), body.get("expires_in")
        if answer.status == 200 and isinstance(token, str) and token:
            if isinstance(lifetime, (int, float)) and lifetime > 0:
                return token, float(lifetime)
            return token, 0.0  # without a usable lifetime it is stale: the next call mints anew
        error, description = body.get("error"), body.get("error_description")
        reason = description if isinstance(description, str) else f"HTTP {answer.status}"
        if error == "invalid_grant":
            raise SessionTokenError(
                "key_rejected",
                f"The user key was rejected ({reason}): log in again with agentpass login",
            )
        if error == "invalid_target":
            raise SessionTokenError(
                "unknown_resource",
                f"No partner is registered for the resource {self.resource} ({reason})",
            )
        if answer.status == 429:
            retry_after = answer.headers.get("Retry-After", "")
            raise SessionTokenError(
                "rate_limited",
                f"Too many tokens minted with this key ({reason})",
                int(retry_after) if retry_after.isdigit() else None,
            )
        raise SessionTokenError(
            "unexpected_response", f"AgentPass could not mint a token: {reason}"
        )


def _resolve_url(url: str | None, saved: dict[str, str]) -> str:
    """``url``, else ``AGENTPASS_URL``, else the one server the command line logged in to, as
    the command line itself chooses. Never a built-in URL: the user key would go to it."""
    given = url or os.environ.get("AGENTPASS_URL")
    if not given and len(saved) > 1:
        raise SessionTokenError(
            "no_url",
            f"Logged in to several AgentPass servers ({', '.join(saved)}): "
            "pass url or set AGENTPASS_URL",
        )
    if not given and not saved:
        raise SessionTokenError(
            "no_url", "No AgentPass URL: pass url or set AGENTPASS_URL (or run: agentpass login)"
        )
    base = service_url(given or next(iter(saved)))
    if not isinstance(base, str):
        raise SessionTokenError("invalid_url", f"Not an http(s) URL: {given}")
    return base
