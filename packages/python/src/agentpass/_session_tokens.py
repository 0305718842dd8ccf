"""``SessionTokens``: the agent's side, session tokens minted from the person's user key."""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Generator
from urllib.parse import urlencode

from ._agents import AgentKeyError, agent_jwt
from ._cli_profile import SavedProfile, saved_profiles
from ._dpop import DpopKey, create_dpop_key, import_dpop_key
from ._post import NoAnswer, ServiceAnswer, post_to_agentpass
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
    ``unexpected_response``; with ``dpop=True`` also ``dpop_key_invalid`` (the key saved for the
    URL is not a P-256 private JWK) and ``dpop_proof_invalid`` (AgentPass refused the proof);
    with ``agent`` also ``no_agent`` (no agent of that name is saved for the URL) and
    ``agent_rejected`` (AgentPass refused the agent: revoked, expired, or another person's).
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

    ``dpop=True`` binds every token to a key (DPoP, RFC 9449): the key the command line saved
    for that server, else one made in memory. A bound token is worthless without the key: each
    request carries ``Authorization: DPoP <token>`` and a fresh ``DPoP`` proof for its method
    and URL. It needs ``cryptography`` (``pip install 'agentpass[dpop]'``), else ``ImportError``.

    ``agent="claude-code"`` mints as that agent, one ``agentpass agents add`` saved for the URL:
    each mint carries a 60-second JWT its own key signs, and partners learn the agent beside the
    email (``VerifyResult.agent``). It needs ``cryptography`` too; not with ``resource``.

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
        dpop: bool = False,
        agent: str | None = None,
        timeout: float = 10.0,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        saved = saved_profiles()
        self.url: str = _resolve_url(url, saved)
        profile = saved.get(self.url)
        key = user_key or os.environ.get("AGENTPASS_USER_KEY") or (profile and profile.key)
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
        self._dpop_key = _dpop_key_for(self.url, profile) if dpop else None
        self.agent = agent
        self._agent = _saved_agent(self.url, profile, agent) if agent is not None else None
        if self._agent is not None and resource is not None:
            raise ValueError("agent= mints at /api/session-tokens, which takes no resource")
        self._issuer: str | None = None
        # The last nonce AgentPass handed out: the next mint's proof carries it (RFC 9449 8).
        self._dpop_nonce: str | None = None

    def token(self, force_refresh: bool = False) -> str:
        """A session token with more than 60 seconds left: the last one, or a fresh one.
        ``force_refresh=True`` mints a fresh one whatever is left of the last, as an agent does
        after a partner answered 401 (the person may have revoked and logged in again)."""
        with self._lock:
            asked = self._now()
            if force_refresh or self._token is None or asked >= self._fresh_until:
                self._token, lifetime = self._mint()
                # AgentPass answered after `asked`: the token lives at least `lifetime` from it.
                self._fresh_until = asked + lifetime - REUSE_MARGIN
            return self._token

    @property
    def dpop_thumbprint(self) -> str | None:
        """The RFC 7638 thumbprint of the key tokens are bound to (their ``cnf.jkt``); None
        without ``dpop``."""
        return self._dpop_key.thumbprint if self._dpop_key is not None else None

    def headers_for(self, method: str, url: str, *, force_refresh: bool = False) -> dict[str, str]:
        """The headers that authenticate one request: ``Authorization: Bearer <token>``, or with
        ``dpop`` ``Authorization: DPoP <token>`` and a ``DPoP`` proof for ``method`` and ``url``
        (one use only: ask again for every request)."""
        token = self.token(force_refresh)
        if self._dpop_key is None:
            return {"Authorization": f"Bearer {token}"}
        proof = self._dpop_key.proof(method, url, access_token=token)
        return {"Authorization": f"DPoP {token}", "DPoP": proof}

    def requests_auth(self) -> requests.auth.AuthBase:
        """An auth object for ``requests``: every request carries ``headers_for`` it."""
        import requests.auth  # lazily: requests is the caller's choice, not our dependency

        tokens = self

        class _SessionTokenAuth(requests.auth.AuthBase):
            def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
                request.headers.update(tokens.headers_for(str(request.method), str(request.url)))
                return request

        return _SessionTokenAuth()

    def httpx_auth(self) -> httpx.Auth:
        """An auth object for ``httpx.Client``: every request carries ``headers_for`` it; one
        answered 401 is sent once more with a freshly minted token. For ``httpx.AsyncClient``,
        ``AsyncSessionTokens(...).httpx_auth()`` mints without blocking the event loop."""
        import httpx  # lazily: httpx is the caller's choice, not our dependency

        tokens = self

        class _SessionTokenAuth(httpx.Auth):
            def auth_flow(
                self, request: httpx.Request
            ) -> Generator[httpx.Request, httpx.Response, None]:
                request.headers.update(tokens.headers_for(request.method, str(request.url)))
                response = yield request
                if response.status_code == 401:
                    fresh = tokens.headers_for(request.method, str(request.url), force_refresh=True)
                    request.headers.update(fresh)
                    yield request

        return _SessionTokenAuth()

    def _mint(self) -> tuple[str, float]:
        """``POST /oauth/token`` with the refresh grant (the user key is the refresh token), or
        as an agent ``POST /api/session-tokens`` with its JWT."""
        if self._agent is not None:
            return self._mint_as_agent(*self._agent)
        form = {
            "grant_type": "refresh_token",
            "refresh_token": self._user_key,
            "client_id": CLIENT_ID,
        }
        if self.resource is not None:
            form["resource"] = self.resource
        answer = self._post_token_request(urlencode(form).encode())
        body = answer.body or {}
        token, lifetime = body.get("access_token"), body.get("expires_in")
        error, description = body.get("error"), body.get("error_description")
        reason = description if isinstance(description, str) else f"HTTP {answer.status}"
        if answer.status == 200 and isinstance(token, str) and token:
            if self._dpop_key is not None and body.get("token_type") != "DPoP":
                raise SessionTokenError(
                    "unexpected_response",
                    f"AgentPass at {self.url} answered a token not bound to the DPoP key "
                    f"(token_type {body.get('token_type')})",
                )
            if isinstance(lifetime, (int, float)) and lifetime > 0:
                return token, float(lifetime)
            return token, 0.0  # without a usable lifetime it is stale: the next call mints anew
        if error in ("invalid_dpop_proof", "use_dpop_nonce"):
            raise SessionTokenError(
                "dpop_proof_invalid", f"AgentPass refused the DPoP proof ({reason})"
            )
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

    def _mint_as_agent(
        self, agent_id: str, agent_key: dict[str, Any], host_key: dict[str, Any]
    ) -> tuple[str, float]:
        """``POST /api/session-tokens`` with ``{"agent": <its JWT, aud the issuer>}``, and with
        ``dpop`` a proof of that request by the login's key."""
        try:
            jwt = agent_jwt(agent_key, host_key, agent_id, self._agent_auth_issuer())
        except AgentKeyError as invalid:
            raise SessionTokenError(
                "no_agent", f"The agent {self.agent} saved for {self.url} has no usable key"
            ) from invalid
        mint_url = f"{self.url}/api/session-tokens"
        proof = self._dpop_key.proof("POST", mint_url) if self._dpop_key is not None else None
        answer = post_to_agentpass(
            mint_url,
            content_type="application/json",
            data=json.dumps({"agent": jwt}).encode(),
            timeout=self._timeout,
            bearer=self._user_key,
            dpop=proof,
        )
        if isinstance(answer, NoAnswer):
            raise SessionTokenError(
                "network_error", f"{NETWORK_ERROR} ({self.url}: {answer.reason})"
            )
        body = answer.body or {}
        token, expires_at = body.get("sessionToken"), body.get("expiresAt")
        reason = body.get("error") if isinstance(body.get("error"), str) else f"HTTP {answer.status}"
        if answer.status == 201 and isinstance(token, str) and isinstance(expires_at, str):
            expires = datetime.fromisoformat(expires_at.replace("Z", "+00:00")).timestamp()
            return token, max(0.0, expires - time.time())
        if body.get("code") == "agent_jwt_invalid":
            raise SessionTokenError("agent_rejected", f"AgentPass refused the agent ({reason})")
        if body.get("code") == "dpop_proof_invalid":
            raise SessionTokenError("dpop_proof_invalid", f"AgentPass refused the proof ({reason})")
        if answer.status in (401, 403):
            raise SessionTokenError("key_rejected", f"The user key was rejected ({reason})")
        raise SessionTokenError("unexpected_response", f"AgentPass could not mint a token: {reason}")

    def _agent_auth_issuer(self) -> str:
        """AgentPass's issuer, an agent JWT's ``aud``, from its Agent Auth discovery (read once):
        the URL it is reached at may not be its public one."""
        if self._issuer is None:
            url = f"{self.url}/.well-known/agent-configuration"
            try:
                with urllib.request.urlopen(url, timeout=self._timeout) as response:  # noqa: S310
                    issuer = json.loads(response.read()).get("issuer")
            except Exception as failed:
                raise SessionTokenError(
                    "network_error", f"{NETWORK_ERROR} ({url}: {failed})"
                ) from failed
            if not isinstance(issuer, str):
                raise SessionTokenError(
                    "unexpected_response", f"AgentPass at {self.url} names no Agent Auth issuer"
                )
            self._issuer = issuer
        return self._issuer

    def _post_token_request(self, form: bytes) -> ServiceAnswer:
        """``POST /oauth/token``; with a DPoP key, with its proof, retried once when AgentPass
        asks for a nonce it had not handed out yet (a repeated one would only loop)."""
        answer = self._post_form(form)
        if self._dpop_key is None or not isinstance(answer.body, dict):
            return answer
        sent = self._dpop_nonce
        self._dpop_nonce = answer.headers.get("DPoP-Nonce") or sent
        if answer.body.get("error") == "use_dpop_nonce" and self._dpop_nonce != sent:
            answer = self._post_form(form)
            self._dpop_nonce = answer.headers.get("DPoP-Nonce") or self._dpop_nonce
        return answer

    def _post_form(self, form: bytes) -> ServiceAnswer:
        token_url = f"{self.url}/oauth/token"
        proof = None
        if self._dpop_key is not None:
            proof = self._dpop_key.proof("POST", token_url, nonce=self._dpop_nonce)
        answer = post_to_agentpass(
            token_url,
            content_type="application/x-www-form-urlencoded",
            data=form,
            timeout=self._timeout,
            dpop=proof,
        )
        if isinstance(answer, NoAnswer):
            raise SessionTokenError(
                "network_error", f"{NETWORK_ERROR} ({self.url}: {answer.reason})"
            )
        return answer


def _dpop_key_for(url: str, profile: SavedProfile | None) -> DpopKey:
    """The key the command line saved for ``url`` (the one a DPoP login's user key is bound
    to), else a new one, in memory: tokens bound to it last no longer than this process."""
    if profile is None or profile.dpop_key is None:
        return create_dpop_key()
    try:
        return import_dpop_key(profile.dpop_key)
    except ValueError as invalid:
        raise SessionTokenError(
            "dpop_key_invalid",
            f"The DPoP key saved for {url} is not a P-256 private JWK ({invalid}): "
            "run agentpass login",
        ) from invalid


def _saved_agent(
    url: str, profile: SavedProfile | None, name: str
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The id and key of the agent ``name`` the command line saved for ``url``, and the host key
    it is registered under."""
    agent = (profile.agents or {}).get(name) if profile is not None else None
    host_key = profile.host_key if profile is not None else None
    if not isinstance(agent, dict) or not isinstance(agent.get("id"), str) or host_key is None:
        raise SessionTokenError(
            "no_agent", f"No agent named {name} is saved for {url}: run agentpass agents add {name}"
        )
    key = agent.get("key")
    if not isinstance(key, dict):
        raise SessionTokenError("no_agent", f"The agent {name} saved for {url} has no key")
    return agent["id"], key, host_key


def _resolve_url(url: str | None, saved: dict[str, SavedProfile]) -> str:
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
