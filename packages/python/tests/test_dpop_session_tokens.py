"""SessionTokens(dpop=True), the agent's side of DPoP: proofs jose accepts, tokens minted bound to
the key (the CLI's saved one, else one in memory), the nonce retried once and never in a loop."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterator

import httpx
import pytest
from conftest import AgentPass
from dpop_reference import jose_private_jwk, verify_with_jose
from test_session_tokens import Clock, save_cli_profile

from agentpass import SessionTokenError, SessionTokens, verify


def introspect(agentpass: AgentPass, token: str) -> dict:
    """What AgentPass tells a partner of a token (RFC 7662), ``cnf.jkt`` for a bound one."""
    return httpx.post(
        f"{agentpass.identity_url}/oauth/introspect",
        data={"token": token},
        headers={"Authorization": f"Bearer {agentpass.partner_key}"},
    ).json()


def test_its_proofs_verify_with_jose_and_name_the_request(agentpass: AgentPass) -> None:
    tokens = SessionTokens(agentpass.identity_url, agentpass.user_key, dpop=True)
    headers = tokens.headers_for("post", "https://partner.example/api/notes?search=kube#top")
    scheme, _, token = headers["Authorization"].partition(" ")
    read = verify_with_jose(headers["DPoP"])
    assert scheme == "DPoP"
    assert read["header"]["typ"] == "dpop+jwt"
    assert set(read["header"]["jwk"]) == {"kty", "crv", "x", "y"}, "the public key only"
    assert read["jkt"] == tokens.dpop_thumbprint
    payload = read["payload"]
    assert (payload["htm"], payload["htu"]) == ("POST", "https://partner.example/api/notes")
    ath = base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=")
    assert payload["ath"] == ath.decode()
    assert len(payload["jti"]) >= 16
    again = tokens.headers_for("POST", "https://partner.example/api/notes")
    assert verify_with_jose(again["DPoP"])["payload"]["jti"] != payload["jti"], "one per request"


def test_mints_tokens_bound_to_its_key(agentpass: AgentPass) -> None:
    tokens = SessionTokens(agentpass.identity_url, agentpass.user_key, dpop=True)
    introspected = introspect(agentpass, tokens.token())
    assert introspected["active"] is True
    assert introspected["token_type"] == "DPoP"
    assert introspected["cnf"] == {"jkt": tokens.dpop_thumbprint}
    # Without its proof the token is worth nothing to a partner.
    refused = verify(agentpass.partner_key, tokens.token(), agentpass.identity_url)
    assert (refused.status, refused.code) == (401, "session_token_proof_required")


def test_without_dpop_tokens_stay_bearer_tokens(agentpass: AgentPass) -> None:
    tokens = SessionTokens(agentpass.identity_url, agentpass.user_key)
    assert tokens.dpop_thumbprint is None
    headers = tokens.headers_for("GET", f"{agentpass.notes_url}/api/notes")
    assert headers == {"Authorization": f"Bearer {tokens.token()}"}
    assert "cnf" not in introspect(agentpass, tokens.token())
    assert verify(agentpass.partner_key, tokens.token(), agentpass.identity_url).ok


def test_an_agent_lists_its_notes_and_calls_mcp_with_bound_tokens(agentpass: AgentPass) -> None:
    """The notes API checks proofs too (REST through /api/verify, /mcp through introspection)."""
    rest = SessionTokens(agentpass.identity_url, agentpass.user_key, dpop=True)
    listed = httpx.get(f"{agentpass.notes_url}/api/notes", auth=rest.httpx_auth())
    assert listed.status_code == 200
    copied = httpx.get(
        f"{agentpass.notes_url}/api/notes", headers={"Authorization": f"Bearer {rest.token()}"}
    )
    assert (copied.status_code, copied.json()["code"]) == (401, "session_token_proof_required")
    mcp = f"{agentpass.notes_url}/mcp"
    tools = SessionTokens(agentpass.identity_url, agentpass.user_key, resource=mcp, dpop=True)
    answer = httpx.post(
        mcp,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
        auth=tools.httpx_auth(),
    )
    assert answer.status_code == 200
    assert "search_notes" in [tool["name"] for tool in answer.json()["result"]["tools"]]


def test_uses_the_key_the_cli_saved_for_the_url(agentpass: AgentPass, tmp_path: Path) -> None:
    jwk, jkt = jose_private_jwk()
    save_cli_profile(agentpass.identity_url, agentpass.user_key, tmp_path / "config", jwk)
    tokens = SessionTokens(dpop=True)
    assert tokens.dpop_thumbprint == jkt
    assert introspect(agentpass, tokens.token())["cnf"] == {"jkt": jkt}
    # Another URL's process has none saved: a key of its own, in memory.
    assert SessionTokens("http://127.0.0.1:9", "apu_key", dpop=True).dpop_thumbprint != jkt


def test_uses_the_key_the_cli_itself_saved(agentpass: AgentPass, tmp_path: Path) -> None:
    """`agentpass login --with-key` gives the login a DPoP key, where SessionTokens reads it."""
    from services import NODE, REPO, node_env

    env = node_env(XDG_CONFIG_HOME=str(tmp_path / "config"), AGENTPASS_URL=agentpass.identity_url)
    login = subprocess.run(
        [NODE, "packages/cli/src/bin.ts", "login", "--with-key"],
        cwd=REPO,
        env=env,
        input=agentpass.user_key,
        capture_output=True,
        text=True,
    )
    assert login.returncode == 0, login.stderr
    saved = json.loads((tmp_path / "config" / "agentpass" / "credentials.json").read_text())
    assert "dpopKey" in saved[agentpass.identity_url], "the CLI saves a key with the login"
    tokens = SessionTokens(agentpass.identity_url, dpop=True)
    assert introspect(agentpass, tokens.token())["cnf"] == {"jkt": tokens.dpop_thumbprint}


@pytest.mark.parametrize(
    "dpop_key",
    [
        {"kty": "EC", "crv": "P-384", "x": "AA", "y": "AA", "d": "AA"},
        {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"},
        {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA", "d": "not base64url!"},
    ],
    ids=["another curve", "no private part", "a broken d"],
)
def test_a_saved_key_it_cannot_use_is_a_clear_error(
    agentpass: AgentPass, tmp_path: Path, dpop_key: dict
) -> None:
    save_cli_profile(agentpass.identity_url, agentpass.user_key, tmp_path / "config", dpop_key)
    with pytest.raises(SessionTokenError) as refused:
        SessionTokens(dpop=True)
    assert refused.value.code == "dpop_key_invalid"
    assert SessionTokens().token(), "without dpop the saved key does not matter"


def test_a_saved_key_whose_public_half_is_not_its_own_is_refused(
    agentpass: AgentPass, tmp_path: Path
) -> None:
    jwk, _ = jose_private_jwk()
    other, _ = jose_private_jwk()
    save_cli_profile(
        agentpass.identity_url, agentpass.user_key, tmp_path / "config", {**jwk, "x": other["x"]}
    )
    with pytest.raises(SessionTokenError, match="not the public key of d") as refused:
        SessionTokens(dpop=True)
    assert refused.value.code == "dpop_key_invalid"


def test_without_cryptography_dpop_says_what_to_install() -> None:
    src = Path(__file__).resolve().parents[1] / "src"
    script = (
        "import sys; sys.modules['cryptography'] = None\n"
        f"sys.path.insert(0, {str(src)!r})\n"
        "import agentpass, agentpass.asgi, agentpass.wsgi\n"
        "agentpass.SessionTokens('http://127.0.0.1:9', 'apu_key')\n"
        "try:\n    agentpass.SessionTokens('http://127.0.0.1:9', 'apu_key', dpop=True)\n"
        "except ImportError as missing:\n    print(missing)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "pip install 'agentpass[dpop]'" in done.stdout


class TokenEndpoint:
    """A stand-in authorization server that demands nonces by a rule of the test's, to count the
    token requests a SessionTokens makes; ``nonces`` are those the proofs carried."""

    def __init__(self, nonce_for: Callable[[int], str], accepts: Callable[[str | None], bool]):
        self.nonces: list[str | None] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers["Content-Length"]))
                claims = self.headers["DPoP"].split(".")[1]
                nonce = json.loads(base64.urlsafe_b64decode(claims + "==")).get("nonce")
                endpoint.nonces.append(nonce)
                if accepts(nonce):
                    status, body = 200, {"access_token": "aps_x", "token_type": "DPoP"}
                    body["expires_in"] = 300
                else:
                    status, body = 400, {"error": "use_dpop_nonce"}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("DPoP-Nonce", nonce_for(len(endpoint.nonces)))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def token_endpoint() -> Iterator[Callable[..., TokenEndpoint]]:
    started: list[TokenEndpoint] = []

    def start(nonce_for: Callable[[int], str], accepts: Callable[[str | None], bool]):
        started.append(TokenEndpoint(nonce_for, accepts))
        return started[-1]

    yield start
    for endpoint in started:
        endpoint.server.shutdown()
        endpoint.server.server_close()


def test_retries_once_with_the_nonce_and_keeps_it_for_the_next_mint(token_endpoint) -> None:
    server = token_endpoint(lambda n: "n1", lambda nonce: nonce == "n1")
    clock = Clock()
    tokens = SessionTokens(server.url, "apu_key", dpop=True, now=clock)
    assert tokens.token() == "aps_x"
    assert server.nonces == [None, "n1"]
    clock.now += 300
    tokens.token()
    assert server.nonces == [None, "n1", "n1"], "the nonce learned is sent at once"


@pytest.mark.parametrize(
    "nonce_for", [lambda n: "same", lambda n: f"new-{n}"], ids=["a repeated nonce", "new nonces"]
)
def test_retries_no_more_than_once(token_endpoint, nonce_for: Callable[[int], str]) -> None:
    server = token_endpoint(nonce_for, lambda nonce: False)
    with pytest.raises(SessionTokenError) as refused:
        SessionTokens(server.url, "apu_key", dpop=True).token()
    assert refused.value.code == "dpop_proof_invalid"
    assert len(server.nonces) == 2


def test_never_retries_on_the_nonce_it_just_sent(token_endpoint) -> None:
    server = token_endpoint(lambda n: "same", lambda nonce: False)
    tokens = SessionTokens(server.url, "apu_key", dpop=True)
    for _ in range(2):
        with pytest.raises(SessionTokenError):
            tokens.token()
    assert server.nonces == [None, "same", "same"]
