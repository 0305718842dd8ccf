"""DPoP at the partner: SessionTokens(dpop=True) calls a FastAPI (ASGI), a Flask (WSGI) and the
Node Express partner, all using the libraries' middlewares against the real identity service.
Bound end to end is 200; the same token copied without its proof, with a proof replayed, or with
one made for another URL or method is 401 with the documented code, the same at each partner."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Callable, Dict

import httpx
import pytest
import requests
from conftest import AgentPass
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient
from test_middlewares import Answer, fastapi_partner, flask_partner, node_partner_at

from agentpass import SessionTokens, Verifier, VerifierFault, verify
from agentpass.asgi import AgentPassMiddleware as AsgiMiddleware
from agentpass.wsgi import AgentPassMiddleware as WsgiMiddleware

PROOF_REQUIRED = Answer(
    status=401,
    body={
        "error": "This session token is bound to a key: send its DPoP proof",
        "code": "session_token_proof_required",
    },
    media_type="application/json",
    www_authenticate=(
        'DPoP error="invalid_token", error_description="This session token is bound to a key:'
        ' send its DPoP proof", algs="ES256 EdDSA"'
    ),
    retry_after=None,
)


def proof_invalid(reason: str) -> Answer:
    """The answer to a proof that failed the check AgentPass names in ``reason``."""
    error = f"Invalid DPoP proof: {reason}"
    return Answer(
        status=401,
        body={"error": error, "code": "session_token_proof_invalid"},
        media_type="application/json",
        www_authenticate=(
            f'DPoP error="invalid_dpop_proof", error_description="{error}", algs="ES256 EdDSA"'
        ),
        retry_after=None,
    )


@dataclass(frozen=True)
class Partner:
    """A partner's ``GET /api/me`` and the URL an agent calls it at."""

    url: str
    ask: Callable[[Dict[str, str]], Answer]


@pytest.fixture(scope="module")
def partners(
    agentpass: AgentPass, node_partner: Callable[[str, str], str]
) -> Dict[str, Partner]:
    verifier = Verifier(agentpass.partner_key, agentpass.identity_url)
    node_url = node_partner(agentpass.identity_url, agentpass.partner_key)
    return {
        # The test clients address http://testserver and http://localhost.
        "fastapi": Partner("http://testserver/api/me", fastapi_partner(verifier)),
        "flask": Partner("http://localhost/api/me", flask_partner(verifier)),
        "node": Partner(f"{node_url}/api/me", node_partner_at(node_url)),
    }


@pytest.fixture(scope="module")
def agent(agentpass: AgentPass) -> SessionTokens:
    return SessionTokens(agentpass.identity_url, agentpass.user_key, dpop=True)


PARTNERS = ["fastapi", "flask", "node"]
PYTHON_PARTNERS = {"fastapi": fastapi_partner, "flask": flask_partner}


@pytest.mark.parametrize("name", PARTNERS)
def test_a_bound_token_with_its_proof_is_the_person(
    name: str, partners: Dict[str, Partner], agent: SessionTokens, agentpass: AgentPass
) -> None:
    partner = partners[name]
    for _ in range(2):  # a fresh proof for each request
        answer = partner.ask(agent.headers_for("GET", partner.url))
        assert (answer.status, answer.body) == (200, {"email": agentpass.email})


def copied_as_bearer(agent: SessionTokens, url: str) -> Dict[str, str]:
    return {"Authorization": f"Bearer {agent.token()}"}


def copied_as_x_session_token(agent: SessionTokens, url: str) -> Dict[str, str]:
    return {"x-session-token": agent.token()}


def without_its_proof(agent: SessionTokens, url: str) -> Dict[str, str]:
    return {"Authorization": agent.headers_for("GET", url)["Authorization"]}


def proof_for_another_url(agent: SessionTokens, url: str) -> Dict[str, str]:
    return agent.headers_for("GET", url.replace("/api/me", "/api/notes"))


def proof_for_another_method(agent: SessionTokens, url: str) -> Dict[str, str]:
    return agent.headers_for("POST", url)


def proof_too_long_to_read(agent: SessionTokens, url: str) -> Dict[str, str]:
    return {**agent.headers_for("GET", url), "DPoP": "x" * 8193}


UNREADABLE = Answer(
    status=401,
    body={
        "error": "Invalid DPoP proof: the proof or this request's URL is malformed or too long",
        "code": "session_token_proof_invalid",
    },
    media_type="application/json",
    www_authenticate=(
        'DPoP error="invalid_dpop_proof", error_description="Invalid DPoP proof: the proof or'
        " this request's URL is malformed or too long\", algs=\"ES256 EdDSA\""
    ),
    retry_after=None,
)


@pytest.mark.parametrize("name", PARTNERS)
@pytest.mark.parametrize(
    ("headers_of", "expected"),
    [
        (copied_as_bearer, PROOF_REQUIRED),
        (copied_as_x_session_token, PROOF_REQUIRED),
        (without_its_proof, PROOF_REQUIRED),
        (proof_for_another_url, proof_invalid("The DPoP proof's htu is not this URL")),
        (proof_for_another_method, proof_invalid("The DPoP proof's htm is not this method")),
        (proof_too_long_to_read, UNREADABLE),
    ],
)
def test_a_bound_token_without_its_right_proof_is_refused(
    name: str,
    headers_of: Callable[[SessionTokens, str], Dict[str, str]],
    expected: Answer,
    partners: Dict[str, Partner],
    agent: SessionTokens,
) -> None:
    partner = partners[name]
    assert partner.ask(headers_of(agent, partner.url)) == expected


@pytest.mark.parametrize("name", PARTNERS)
def test_a_replayed_proof_is_refused(
    name: str, partners: Dict[str, Partner], agent: SessionTokens
) -> None:
    partner = partners[name]
    captured = agent.headers_for("GET", partner.url)
    assert partner.ask(captured).status == 200
    assert partner.ask(captured) == proof_invalid("The DPoP proof was used already (its jti)")


@pytest.mark.parametrize("framework", ["fastapi", "flask"])
def test_behind_a_proxy_proofs_are_for_the_public_url(
    framework: str, partners: Dict[str, Partner], agent: SessionTokens, agentpass: AgentPass
) -> None:
    """A Python partner whose public URL is the Node partner's: the proofs made for that URL
    pass, those made for the address the request came to do not."""
    node, local = partners["node"], partners[framework]
    public_url = node.url.removesuffix("/api/me")
    verifier = Verifier(agentpass.partner_key, agentpass.identity_url)
    proxied = PYTHON_PARTNERS[framework](verifier, public_url)
    assert proxied(agent.headers_for("GET", node.url)).body == {"email": agentpass.email}
    refused = proxied(agent.headers_for("GET", local.url))
    assert refused == proof_invalid("The DPoP proof's htu is not this URL")
    # AgentPass spends each proof once, whichever partner forwards it.
    captured = agent.headers_for("GET", node.url)
    assert node.ask(captured).status == 200
    assert proxied(captured) == proof_invalid("The DPoP proof was used already (its jti)")


def test_a_public_url_that_is_not_one_is_refused_at_start_up(agentpass: AgentPass) -> None:
    verifier = Verifier(agentpass.partner_key, agentpass.identity_url)
    for public_url in ("partner.example", "ftp://partner.example", "https://partner.example/?a"):
        with pytest.raises(ValueError, match="public_url"):
            AsgiMiddleware(FastAPI(), verifier, public_url=public_url)
        with pytest.raises(ValueError, match="public_url"):
            WsgiMiddleware(lambda environ, start_response: [], verifier, public_url=public_url)


@pytest.mark.parametrize("name", PARTNERS)
def test_an_unbound_token_under_the_dpop_scheme_is_the_person(
    name: str, partners: Dict[str, Partner], agent: SessionTokens, agentpass: AgentPass
) -> None:
    """A token minted without a proof is unbound: the proof that comes with it is not its key's,
    and AgentPass does not look at it, as before DPoP."""
    partner = partners[name]
    unbound = SessionTokens(agentpass.identity_url, agentpass.user_key).token()
    headers = agent.headers_for("GET", partner.url)
    headers["Authorization"] = f"DPoP {unbound}"
    assert partner.ask(headers).body == {"email": agentpass.email}


def me_app(verifier: Verifier) -> FastAPI:
    app = FastAPI()
    app.add_middleware(AsgiMiddleware, verifier=verifier)

    @app.get("/api/me")
    def me(request: Request) -> dict:
        return {"email": request.state.agentpass_email}

    return app


def test_the_httpx_auth_signs_each_request_sync_and_async(
    agent: SessionTokens, agentpass: AgentPass
) -> None:
    app = me_app(Verifier(agentpass.partner_key, agentpass.identity_url))
    client = TestClient(app)
    for _ in range(2):
        answer = client.get("/api/me", params={"page": "1"}, auth=agent.httpx_auth())
        assert (answer.status_code, answer.json()) == (200, {"email": agentpass.email})

    async def ask_twice() -> list[int]:
        async with httpx.AsyncClient(
            app=app, base_url="http://partner.test", auth=agent.httpx_auth()
        ) as client:
            return [(await client.get("/api/me")).status_code for _ in range(2)]

    assert asyncio.run(ask_twice()) == [200, 200]


def test_the_requests_auth_signs_each_request(
    agent: SessionTokens, partners: Dict[str, Partner], agentpass: AgentPass
) -> None:
    session = requests.Session()
    session.auth = agent.requests_auth()
    for _ in range(2):
        answer = session.get(partners["node"].url, params={"page": "1"})
        assert (answer.status_code, answer.json()) == (200, {"email": agentpass.email})
    assert answer.request.headers["Authorization"].startswith("DPoP aps_")


def test_the_verifier_never_reuses_a_result_got_with_a_proof(
    agent: SessionTokens, agentpass: AgentPass
) -> None:
    verifier = Verifier(agentpass.partner_key, agentpass.identity_url, cache_ttl=5)
    url = "https://partner.example/api/me"
    dpop = {"proof": agent.headers_for("GET", url)["DPoP"], "method": "GET", "url": url}
    first = verifier.verify(agent.token(), dpop=dpop)
    assert (first.ok, first.email) == (True, agentpass.email)
    again = verifier.verify(agent.token(), dpop=dpop)
    assert (again.status, again.code) == (401, "session_token_proof_invalid")
    assert again.error == "Invalid DPoP proof: The DPoP proof was used already (its jti)"
    # Nor does a call without the proof ride on the success.
    bare = verifier.verify(agent.token())
    assert (bare.status, bare.code) == (401, "session_token_proof_required")


def test_a_proof_refused_is_no_fault_of_the_partner(
    agent: SessionTokens, agentpass: AgentPass
) -> None:
    faults: list[VerifierFault] = []
    verifier = Verifier(agentpass.partner_key, agentpass.identity_url, on_error=faults.append)
    assert verifier.verify(agent.token()).code == "session_token_proof_required"
    url = "https://partner.example/api/me"
    wrong = {"proof": agent.headers_for("GET", url)["DPoP"], "method": "PUT", "url": url}
    assert verifier.verify(agent.token(), dpop=wrong).code == "session_token_proof_invalid"
    assert faults == []


@pytest.mark.parametrize(
    "dpop",
    [
        "a proof",
        {"proof": "x", "method": "GET"},
        {"proof": "x", "method": "GET", "url": "/api/me"},
        {"proof": 1, "method": "GET", "url": "https://partner.example/"},
        {"proof": "x" * 8193, "method": "GET", "url": "https://partner.example/"},
    ],
    ids=["not an object", "no url", "a relative url", "a proof not a string", "too long"],
)
def test_verify_refuses_a_dpop_of_another_shape_without_asking(
    dpop: object, agentpass: AgentPass, unreachable_url: str
) -> None:
    """Refused in AgentPass's words, without a request: the URL is one where nothing answers."""
    expected = (400, "dpop_field_invalid", "Invalid dpop: expected {proof, method, url}")
    result = verify(agentpass.partner_key, "aps_token", unreachable_url, dpop=dpop)
    assert (result.status, result.code, result.error) == expected


def test_agentpass_refuses_a_dpop_of_another_shape_in_the_same_words(
    agentpass: AgentPass, agent: SessionTokens
) -> None:
    asked = httpx.post(
        f"{agentpass.identity_url}/api/verify",
        json={"sessionToken": agent.token(), "dpop": {"proof": "x", "method": "GET", "url": "/a"}},
        headers={"Authorization": f"Bearer {agentpass.partner_key}"},
    )
    expected = (400, "dpop_field_invalid", "Invalid dpop: expected {proof, method, url}")
    assert (asked.status_code, asked.json()["code"], asked.json()["error"]) == expected
