"""SessionTokens(agent=…): minting as an agent the command line saved (issue 54), so that a
partner learns which agent acts; and the partner's side, VerifyResult.agent and no cached
verdict on an agent's one-time JWT."""

from __future__ import annotations

import base64
import json
import secrets
import time
from pathlib import Path

import httpx
import pytest
from conftest import AgentPass
from services import run_node
from test_session_tokens import save_cli_profile
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agentpass import Agent, SessionTokenError, SessionTokens, Verifier, verify
from agentpass.wsgi import AGENT_ENVIRON_KEY, AgentPassMiddleware
from agentpass._agents import agent_jwt, thumbprint


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def new_key() -> dict[str, str]:
    """A private Ed25519 JWK, as the command line saves one."""
    from cryptography.hazmat.primitives import serialization

    private = Ed25519PrivateKey.generate()
    raw = serialization.Encoding.Raw
    public = private.public_key().public_bytes(raw, serialization.PublicFormat.Raw)
    secret = private.private_bytes(raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    return {"kty": "OKP", "crv": "Ed25519", "x": _b64(public), "d": _b64(secret)}


def host_jwt(host_key: dict[str, str], issuer: str, **claims: object) -> str:
    """A host's JWT (Agent Auth Protocol section 4.2), signed here as an outside client would."""
    public = {"kty": "OKP", "crv": "Ed25519", "x": host_key["x"]}
    now = int(time.time())
    payload = {
        "iss": thumbprint(public),
        "aud": issuer,
        "iat": now,
        "exp": now + 60,
        "jti": secrets.token_urlsafe(16),
        "host_public_key": public,
        **claims,
    }
    header = _b64(json.dumps({"typ": "host+jwt", "alg": "EdDSA"}).encode())
    signed = f"{header}.{_b64(json.dumps(payload).encode())}"
    signer = Ed25519PrivateKey.from_private_bytes(
        base64.urlsafe_b64decode(host_key["d"] + "=" * (-len(host_key["d"]) % 4))
    )
    return f"{signed}.{_b64(signer.sign(signed.encode()))}"


def register_agent(
    agentpass: AgentPass,
    host_key: dict[str, str],
    name: str,
    capabilities: list[object] | None = None,
) -> tuple[str, dict]:
    """Registers an agent under the host (asking for ``capabilities``) and approves it as the
    person would, granting all it asked for: its id and key."""
    issuer = agentpass.identity_url
    key = new_key()
    public = {"kty": "OKP", "crv": "Ed25519", "x": key["x"]}
    asked = {"capabilities": capabilities} if capabilities is not None else {}
    registered = httpx.post(
        f"{issuer}/agent/register",
        json={"name": name, "host_name": "pytest", **asked},
        headers={"Authorization": f"Bearer {host_jwt(host_key, issuer, agent_public_key=public)}"},
    )
    assert registered.status_code == 200, registered.text
    code = registered.json()["approval"]["user_code"]
    decided = run_node(
        ["packages/python/tests/approve-agent.ts", code, agentpass.email], agentpass.identity_env
    )
    assert decided.splitlines()[-1] == "decided"
    return registered.json()["agent_id"], key


def test_mints_as_a_saved_agent_and_partners_learn_which(
    agentpass: AgentPass, tmp_path: Path
) -> None:
    host_key = new_key()
    agent_id, agent_key = register_agent(agentpass, host_key, "pytest agent")
    save_cli_profile(agentpass.identity_url, agentpass.user_key, tmp_path / "config")
    credentials = tmp_path / "config" / "agentpass" / "credentials.json"
    saved = json.loads(credentials.read_text())
    saved[agentpass.identity_url].update(
        hostKey=host_key, agents={"pytest agent": {"id": agent_id, "key": agent_key}}
    )
    credentials.write_text(json.dumps(saved))

    tokens = SessionTokens(agent="pytest agent")
    result = verify(agentpass.partner_key, tokens.token(), agentpass.identity_url)
    assert result.ok
    assert result.agent == Agent(agent_id, "pytest agent")
    plain = verify(agentpass.partner_key, SessionTokens().token(), agentpass.identity_url)
    assert plain.ok and plain.agent is None, "a token without an agent names none"

    bound = SessionTokens(agent="pytest agent", dpop=True)
    headers = bound.headers_for("GET", f"{agentpass.notes_url}/api/notes")
    notes = httpx.get(f"{agentpass.notes_url}/api/notes", headers=headers)
    assert notes.status_code == 200, notes.text

    with pytest.raises(SessionTokenError) as missing:
        SessionTokens(agent="nobody")
    assert missing.value.code == "no_agent"


def test_never_caches_an_agents_one_time_jwt(agentpass: AgentPass) -> None:
    host_key = new_key()
    agent_id, agent_key = register_agent(agentpass, host_key, "once")
    resource = "https://python-partner.example/"
    agentpass.admin("partner-resources", "add", agentpass.partner_id, resource)
    jwt = agent_jwt(agent_key, host_key, agent_id, resource)
    verifier = Verifier(agentpass.partner_key, agentpass.identity_url, cache_ttl=5)
    first = verifier.verify(jwt)
    assert first.ok and first.agent == Agent(agent_id, "once")
    again = verifier.verify(jwt)
    assert (again.ok, again.code) == (False, "session_token_invalid"), "asked again, refused"


def test_the_wsgi_middleware_hands_over_the_agent_and_names_the_discovery(
    agentpass: AgentPass,
) -> None:
    host_key = new_key()
    agent_id, agent_key = register_agent(agentpass, host_key, "wsgi agent")
    resource = "https://python-partner.example/"
    agentpass.admin("partner-resources", "add", agentpass.partner_id, resource)
    seen: dict[str, object] = {}

    def app(environ: dict, start_response: object) -> list[bytes]:
        seen["agent"] = environ.get(AGENT_ENVIRON_KEY)
        start_response("200 OK", [])  # type: ignore[operator]
        return [b"ok"]

    verifier = Verifier(agentpass.partner_key, agentpass.identity_url)
    middleware = AgentPassMiddleware(
        app, verifier, agent_auth_challenge=agentpass.identity_url
    )
    answers: list[tuple[str, list[tuple[str, str]]]] = []
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/me",
        "HTTP_HOST": "python-partner.example",
        "wsgi.url_scheme": "https",
    }
    middleware(environ, lambda status, headers: answers.append((status, headers)))
    status, headers = answers[-1]
    assert status.startswith("401")
    challenge = dict(headers)["WWW-Authenticate"]
    discovery = f"{agentpass.identity_url}/.well-known/agent-configuration"
    assert challenge.endswith(f', AgentAuth discovery="{discovery}"')

    token = agent_jwt(agent_key, host_key, agent_id, resource)
    middleware({**environ, "HTTP_AUTHORIZATION": f"Bearer {token}"}, lambda *_: None)
    assert seen["agent"] == Agent(agent_id, "wsgi agent")
