"""The package as Python people use it (issue 56): per-route protection (a FastAPI dependency,
a Flask decorator) with other routes open, middlewares with paths left open, an async API that
never blocks the event loop, and a fresh token on demand; against the real identity service."""

from __future__ import annotations

import asyncio

import httpx
from conftest import AgentPass
from fastapi import Depends, FastAPI, Request
from fastapi.testclient import TestClient
from flask import Flask, g

from agentpass import AsyncSessionTokens, AsyncVerifier, SessionTokens, Verifier
from agentpass.asgi import AgentPassMiddleware as AsgiMiddleware
from agentpass.fastapi import require_email as fastapi_email
from agentpass.flask import require_email as flask_email
from agentpass.wsgi import AgentPassMiddleware as WsgiMiddleware


def test_a_fastapi_dependency_protects_one_route_and_leaves_the_others(
    agentpass: AgentPass,
) -> None:
    app = FastAPI()
    app.state.agentpass_verifier = Verifier(agentpass.partner_key, agentpass.identity_url)

    @app.get("/healthz")
    def health() -> dict:
        return {"ok": True}

    @app.get("/api/me")
    async def me(request: Request, email: str = Depends(fastapi_email)) -> dict:
        agent = getattr(request.state, "agentpass_agent", None)
        return {"email": email, "agent": agent}

    client = TestClient(app)
    assert client.get("/healthz").status_code == 200
    assert client.get("/docs").status_code == 200
    assert client.get("/openapi.json").status_code == 200
    token = agentpass.mint()
    answer = client.get("/api/me", headers={"x-session-token": token})
    assert answer.status_code == 200
    assert answer.json() == {"email": agentpass.email, "agent": None}
    refused = client.get("/api/me")
    assert refused.status_code == 401
    assert refused.json() == {
        "detail": {"error": "Missing session token", "code": "session_token_missing"}
    }
    assert refused.headers["www-authenticate"].startswith("Bearer")
    invalid = client.get("/api/me", headers={"authorization": "Bearer aps_nothing"})
    assert invalid.status_code == 401
    assert invalid.json()["detail"]["code"] == "session_token_invalid"


def test_a_flask_decorator_protects_one_route_and_leaves_the_others(agentpass: AgentPass) -> None:
    app = Flask(__name__)
    app.extensions["agentpass"] = Verifier(agentpass.partner_key, agentpass.identity_url)

    @app.get("/healthz")
    def health() -> dict:
        return {"ok": True}

    @app.get("/api/me")
    @flask_email
    def me() -> dict:
        return {"email": g.agentpass_email, "agent": g.agentpass_agent}

    client = app.test_client()
    assert client.get("/healthz").status_code == 200
    answer = client.get("/api/me", headers={"x-session-token": agentpass.mint()})
    assert answer.status_code == 200
    assert answer.get_json() == {"email": agentpass.email, "agent": None}
    refused = client.get("/api/me")
    assert refused.status_code == 401
    assert refused.get_json() == {"error": "Missing session token", "code": "session_token_missing"}
    assert refused.headers["WWW-Authenticate"].startswith("Bearer")


def test_the_middlewares_leave_the_paths_they_are_told_open(agentpass: AgentPass) -> None:
    verifier = Verifier(agentpass.partner_key, agentpass.identity_url)
    api = FastAPI()
    api.add_middleware(AsgiMiddleware, verifier=verifier, exclude=("/healthz", "/docs/"))

    @api.get("/healthz")
    def health() -> dict:
        return {"ok": True}

    @api.get("/docs/guide")
    def guide() -> dict:
        return {"ok": True}

    @api.get("/healthz-and-more")
    def lookalike() -> dict:
        return {"ok": True}

    asgi = TestClient(api)
    assert asgi.get("/healthz").status_code == 200
    assert asgi.get("/docs/guide").status_code == 200
    assert asgi.get("/healthz-and-more").status_code == 401

    flask = Flask(__name__)
    flask.wsgi_app = WsgiMiddleware(flask.wsgi_app, verifier, exclude=("/healthz",))  # type: ignore[method-assign]

    @flask.get("/healthz")
    def flask_health() -> dict:
        return {"ok": True}

    @flask.get("/api/me")
    def flask_me() -> dict:
        return {"ok": True}

    wsgi = flask.test_client()
    assert wsgi.get("/healthz").status_code == 200
    assert wsgi.get("/api/me").status_code == 401


def test_async_tokens_mint_off_the_event_loop_and_refresh_on_demand(agentpass: AgentPass) -> None:
    async def scenario() -> None:
        tokens = AsyncSessionTokens(agentpass.identity_url, agentpass.user_key)
        minting = True
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while minting:
                ticks += 1
                await asyncio.sleep(0)

        running = asyncio.create_task(ticker())
        first = await tokens.token()
        minting = False
        await running
        # Minted in a worker thread: the loop ran the other task meanwhile, more than once.
        assert ticks > 1
        assert await tokens.token() == first
        fresh = await tokens.token(force_refresh=True)
        assert fresh != first
        verifier = AsyncVerifier(agentpass.partner_key, agentpass.identity_url)
        verified = await verifier.verify(fresh)
        assert verified.ok and verified.email == agentpass.email
        async with httpx.AsyncClient(auth=tokens.httpx_auth()) as client:
            listed = await client.get(f"{agentpass.notes_url}/api/notes")
            assert listed.status_code == 200

    asyncio.run(scenario())


def test_a_fresh_token_on_demand_and_after_a_401(agentpass: AgentPass) -> None:
    tokens = SessionTokens(agentpass.identity_url, agentpass.user_key)
    first = tokens.token()
    assert tokens.token() == first
    assert tokens.token(force_refresh=True) != first
    seen: list[str] = []

    def partner(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["authorization"])
        return httpx.Response(401 if len(seen) == 1 else 200, json={})

    client = httpx.Client(transport=httpx.MockTransport(partner), auth=tokens.httpx_auth())
    assert client.get("https://partner.example/api").status_code == 200
    assert len(seen) == 2 and seen[0] != seen[1], "sent again with a freshly minted token"
