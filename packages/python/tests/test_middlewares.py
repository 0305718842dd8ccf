"""The ASGI (FastAPI) and WSGI (Flask) middlewares answer exactly as the Node middleware of
@agentpass/verify does (an Express partner, started beside them), against the real identity
service: 200 with the email, 400 for two different tokens, 401 for the agent's token, 503 with
Retry-After for the partner's own faults."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Dict, Iterator

import httpx
import pytest
from conftest import AgentPass
from fastapi import FastAPI, Request, WebSocket
from fastapi.testclient import TestClient
from flask import Flask
from flask import request as flask_request
from starlette.websockets import WebSocketDisconnect

from agentpass import Verifier
from agentpass.asgi import AgentPassMiddleware as AsgiMiddleware
from agentpass.wsgi import AgentPassMiddleware as WsgiMiddleware


@dataclass(frozen=True)
class Answer:
    """What an agent sees of an answer: the parts both implementations must agree on."""

    status: int
    body: object
    media_type: str
    www_authenticate: str | None
    retry_after: str | None


def answer_of(status: int, content: bytes, headers: Dict[str, str]) -> Answer:
    lowered = {name.lower(): value for name, value in headers.items()}
    return Answer(
        status=status,
        body=json.loads(content),
        media_type=lowered.get("content-type", "").split(";")[0],
        www_authenticate=lowered.get("www-authenticate"),
        retry_after=lowered.get("retry-after"),
    )


Partner = Callable[[Dict[str, str]], Answer]


def fastapi_partner(verifier: Verifier, public_url: str | None = None) -> Partner:
    app = FastAPI()
    app.add_middleware(AsgiMiddleware, verifier=verifier, public_url=public_url)

    @app.get("/api/me")
    def me(request: Request) -> dict:
        return {"email": request.state.agentpass_email}

    client = TestClient(app)

    def ask(headers: Dict[str, str]) -> Answer:
        response = client.get("/api/me", headers=headers)
        return answer_of(response.status_code, response.content, dict(response.headers))

    return ask


def flask_partner(verifier: Verifier, public_url: str | None = None) -> Partner:
    app = Flask("partner")
    app.wsgi_app = WsgiMiddleware(  # type: ignore[method-assign]
        app.wsgi_app, verifier, public_url=public_url
    )

    @app.get("/api/me")
    def me() -> dict:
        return {"email": flask_request.environ["agentpass.email"]}

    client = app.test_client()

    def ask(headers: Dict[str, str]) -> Answer:
        response = client.get("/api/me", headers=headers)
        return answer_of(response.status_code, response.get_data(), dict(response.headers))

    return ask


def node_partner_at(url: str) -> Partner:
    def ask(headers: Dict[str, str]) -> Answer:
        response = httpx.get(f"{url}/api/me", headers=headers)
        return answer_of(response.status_code, response.content, dict(response.headers))

    return ask


FRAMEWORKS = {"fastapi": fastapi_partner, "flask": flask_partner}


@dataclass(frozen=True)
class Setting:
    api_url: str
    partner_key: str


@pytest.fixture(scope="module")
def settings(agentpass: AgentPass, unreachable_url: str) -> Dict[str, Setting]:
    revoked_id, revoked_key = agentpass.new_partner_key()
    agentpass.admin("partner-keys", "revoke", revoked_id)
    return {
        "working": Setting(agentpass.identity_url, agentpass.partner_key),
        "revoked partner key": Setting(agentpass.identity_url, revoked_key),
        "unknown partner key": Setting(agentpass.identity_url, "apk_" + "0" * 40),
        "unreachable AgentPass": Setting(unreachable_url, agentpass.partner_key),
    }


@pytest.fixture(scope="module")
def tokens(agentpass: AgentPass) -> Dict[str, str]:
    return {
        "valid": agentpass.mint(),
        "other valid": agentpass.mint(),
        "bound to another partner": agentpass.mint(resource=agentpass.notes_url),
        "unknown": "aps_not-a-real-token",
    }


# (setting, the request's headers with {token names}, the status both must answer)
CASES = [
    ("working", {"x-session-token": "{valid}"}, 200),
    ("working", {"authorization": "Bearer {valid}"}, 200),
    ("working", {"authorization": "bearer {valid}"}, 200),
    ("working", {"x-session-token": "{valid}", "authorization": "Bearer {valid}"}, 200),
    ("working", {"x-session-token": "{valid}", "authorization": "Bearer {other valid}"}, 400),
    ("working", {}, 401),
    ("working", {"x-session-token": ""}, 401),
    ("working", {"authorization": "Basic YWRhOnNlY3JldA=="}, 401),
    ("working", {"authorization": "Bearer"}, 401),
    ("working", {"x-session-token": "{unknown}"}, 401),
    ("working", {"authorization": "Bearer {unknown}"}, 401),
    ("working", {"x-session-token": "{bound to another partner}"}, 401),
    ("revoked partner key", {"x-session-token": "{valid}"}, 503),
    ("revoked partner key", {}, 401),
    ("unknown partner key", {"authorization": "Bearer {valid}"}, 503),
    ("unreachable AgentPass", {"x-session-token": "{valid}"}, 503),
    (
        "unreachable AgentPass",
        {"x-session-token": "{valid}", "authorization": "Bearer {unknown}"},
        400,
    ),
]


@pytest.fixture(scope="module")
def partners(
    settings: Dict[str, Setting], node_partner: Callable[[str, str], str]
) -> Iterator[Callable[[str, str], Partner]]:
    built: Dict[tuple[str, str], Partner] = {}

    def partner(framework: str, setting_name: str) -> Partner:
        if (framework, setting_name) not in built:
            setting = settings[setting_name]
            if framework == "node":
                built[framework, setting_name] = node_partner_at(
                    node_partner(setting.api_url, setting.partner_key)
                )
            else:
                verifier = Verifier(
                    setting.partner_key, setting.api_url, on_error=lambda fault: None
                )
                built[framework, setting_name] = FRAMEWORKS[framework](verifier)
        return built[framework, setting_name]

    yield partner


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize(("setting", "headers", "status"), CASES)
def test_answers_as_the_node_middleware(
    framework: str,
    setting: str,
    headers: Dict[str, str],
    status: int,
    tokens: Dict[str, str],
    agentpass: AgentPass,
    partners: Callable[[str, str], Partner],
) -> None:
    sent = {name: value.format(**tokens) for name, value in headers.items()}
    python = partners(framework, setting)(sent)
    node = partners("node", setting)(sent)
    assert python == node
    assert python.status == status
    if status == 200:
        assert python.body == {"email": agentpass.email}
    if status == 503:
        assert python.body == {
            "error": "Identity service unavailable",
            "code": "identity_unavailable",
        }
        assert python.retry_after == "5"


def test_a_failure_is_json_with_the_401_challenge(partners: Callable[[str, str], Partner]) -> None:
    """The Node middleware's exact answer to a request without a token, spelled out."""
    for framework in FRAMEWORKS:
        answer = partners(framework, "working")({})
        assert answer == Answer(
            status=401,
            body={"error": "Missing session token", "code": "session_token_missing"},
            media_type="application/json",
            www_authenticate='Bearer, AgentPass-Session header="x-session-token"',
            retry_after=None,
        )


def test_a_websocket_opens_only_with_a_token_agentpass_verifies(
    agentpass: AgentPass, tokens: Dict[str, str]
) -> None:
    app = FastAPI()
    app.add_middleware(
        AsgiMiddleware, verifier=Verifier(agentpass.partner_key, agentpass.identity_url)
    )

    @app.websocket("/ws")
    async def greet(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_json({"email": websocket.state.agentpass_email})
        await websocket.close()

    client = TestClient(app)
    with client.websocket_connect("/ws", headers={"x-session-token": tokens["valid"]}) as socket:
        assert socket.receive_json() == {"email": agentpass.email}
    for headers in ({}, {"x-session-token": tokens["unknown"]}):
        with pytest.raises(WebSocketDisconnect) as closed:
            with client.websocket_connect("/ws", headers=headers):
                pass
        assert closed.value.code == 1008  # policy violation, before the handshake is accepted
