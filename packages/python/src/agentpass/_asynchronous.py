"""The async API: ``AsyncVerifier`` and ``AsyncSessionTokens``, for asyncio applications. Every
call to AgentPass runs in a worker thread (``asyncio.to_thread``), so the event loop keeps
serving while it waits; the sync objects underneath keep their caches and locks."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, AsyncGenerator, Mapping, Sequence

from ._capabilities import AuthorizeResult
from ._result import VerifyResult
from ._session_tokens import SessionTokens
from ._verifier import Verifier

if TYPE_CHECKING:
    import httpx


class AsyncVerifier:
    """``Verifier`` for asyncio: the same arguments, the same results, awaited.

    Example::

        from agentpass import AsyncVerifier

        agentpass = AsyncVerifier(cache_ttl=5)
        result = await agentpass.verify(request.headers.get("x-session-token"))
        if result.ok:
            print(result.email)
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sync: Verifier = kwargs.pop("verifier", None) or Verifier(*args, **kwargs)
        """The ``Verifier`` underneath (its cache is shared by both)."""

    @property
    def api_url(self) -> str:
        return self.sync.api_url

    async def verify(self, session_token: object, *, dpop: object = None) -> VerifyResult:
        """``Verifier.verify``, off the event loop; never raises."""
        return await asyncio.to_thread(self.sync.verify, session_token, dpop=dpop)

    async def authorize_capability(
        self, token: object, capability: object, arguments: object = None
    ) -> AuthorizeResult:
        """``Verifier.authorize_capability``, off the event loop; never raises."""
        return await asyncio.to_thread(self.sync.authorize_capability, token, capability, arguments)

    async def declare_capabilities(
        self, capabilities: Sequence[Mapping[str, Any]]
    ) -> tuple[bool, dict[str, Any]]:
        """``Verifier.declare_capabilities``, off the event loop."""
        return await asyncio.to_thread(self.sync.declare_capabilities, capabilities)


class AsyncSessionTokens:
    """``SessionTokens`` for asyncio: the same arguments; ``token()`` and ``headers_for()``
    awaited, minting in a worker thread so the event loop never waits on AgentPass.

    Example::

        import httpx
        from agentpass import AsyncSessionTokens

        tokens = AsyncSessionTokens()
        async with httpx.AsyncClient(auth=tokens.httpx_auth()) as client:
            notes = (await client.get(f"{notes_url}/api/notes")).json()
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sync: SessionTokens = SessionTokens(*args, **kwargs)
        """The ``SessionTokens`` underneath (its token is shared by both)."""

    async def token(self, force_refresh: bool = False) -> str:
        """``SessionTokens.token``, off the event loop; raises ``SessionTokenError`` as it does."""
        return await asyncio.to_thread(self.sync.token, force_refresh)

    async def headers_for(
        self, method: str, url: str, *, force_refresh: bool = False
    ) -> dict[str, str]:
        """``SessionTokens.headers_for``, off the event loop."""
        return await asyncio.to_thread(
            lambda: self.sync.headers_for(method, url, force_refresh=force_refresh)
        )

    def httpx_auth(self) -> httpx.Auth:
        """An auth object for ``httpx.AsyncClient``: every request carries ``headers_for`` it,
        minted off the event loop; one answered 401 is sent once more with a fresh token."""
        import httpx  # lazily: httpx is the caller's choice, not our dependency

        tokens = self

        class _AsyncSessionTokenAuth(httpx.Auth):
            async def async_auth_flow(
                self, request: httpx.Request
            ) -> AsyncGenerator[httpx.Request, httpx.Response]:
                url = str(request.url)
                request.headers.update(await tokens.headers_for(request.method, url))
                response = yield request
                if response.status_code == 401:
                    fresh = await tokens.headers_for(request.method, url, force_refresh=True)
                    request.headers.update(fresh)
                    yield request

        return _AsyncSessionTokenAuth()
