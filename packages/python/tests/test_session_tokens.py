"""SessionTokens, the agent's side: minting with the refresh grant, reuse until 60 s before
expiry, the CLI's saved key, and calls to the real notes API and its MCP endpoint."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import requests
from conftest import AgentPass
from services import NODE, REPO, node_env

from agentpass import SessionTokenError, SessionTokens, verify

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


class Clock:
    """A monotonic clock the test moves, in seconds."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_agent_lists_its_notes_with_httpx(agentpass: AgentPass) -> None:
    tokens = SessionTokens(agentpass.identity_url, agentpass.user_key)
    response = httpx.get(f"{agentpass.notes_url}/api/notes", auth=tokens.httpx_auth())
    assert response.status_code == 200
    assert set(response.json()) >= {"notes", "total"}


def test_the_httpx_auth_serves_an_async_client_too(agentpass: AgentPass) -> None:
    tokens = SessionTokens(agentpass.identity_url, agentpass.user_key)

    async def list_notes() -> int:
        async with httpx.AsyncClient(auth=tokens.httpx_auth()) as client:
            response = await client.get(f"{agentpass.notes_url}/api/notes")
            return response.status_code

    assert asyncio.run(list_notes()) == 200


def test_an_agent_creates_and_finds_a_note_with_requests(agentpass: AgentPass) -> None:
    session = requests.Session()
    session.auth = SessionTokens(agentpass.identity_url, agentpass.user_key).requests_auth()
    created = session.post(
        f"{agentpass.notes_url}/api/notes", json={"title": "Written from requests"}
    )
    assert created.status_code == 201
    found = session.get(f"{agentpass.notes_url}/api/notes", params={"search": "requests"})
    assert found.status_code == 200
    assert [note["title"] for note in found.json()["notes"]] == ["Written from requests"]


def test_an_agent_calls_the_mcp_endpoint_with_a_token_bound_to_it(agentpass: AgentPass) -> None:
    mcp = f"{agentpass.notes_url}/mcp"
    tokens = SessionTokens(agentpass.identity_url, agentpass.user_key, resource=mcp)
    auth = tokens.httpx_auth()
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "python-agent", "version": "0.1.0"},
        },
    }
    answer = httpx.post(mcp, json=initialize, headers=MCP_HEADERS, auth=auth)
    assert answer.status_code == 200
    assert answer.json()["result"]["protocolVersion"] == "2025-11-25"
    listed = httpx.post(
        mcp,
        json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        headers=MCP_HEADERS,
        auth=auth,
    )
    assert listed.status_code == 200
    assert "search_notes" in [tool["name"] for tool in listed.json()["result"]["tools"]]


def test_the_mcp_endpoint_refuses_a_token_bound_to_no_partner(agentpass: AgentPass) -> None:
    tokens = SessionTokens(agentpass.identity_url, agentpass.user_key)
    answer = httpx.post(
        f"{agentpass.notes_url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers=MCP_HEADERS,
        auth=tokens.httpx_auth(),
    )
    assert (answer.status_code, answer.json()["code"]) == (401, "session_token_unbound")


def test_a_resource_binds_the_token_to_the_partner_that_registered_it(agentpass: AgentPass) -> None:
    bound = SessionTokens(
        agentpass.identity_url, agentpass.user_key, resource=agentpass.notes_url
    ).token()
    # Another partner cannot replay it.
    refused = verify(agentpass.partner_key, bound, agentpass.identity_url)
    assert (refused.status, refused.code) == (401, "session_token_invalid")


def test_an_unknown_resource_is_refused(agentpass: AgentPass) -> None:
    tokens = SessionTokens(
        agentpass.identity_url, agentpass.user_key, resource="http://127.0.0.1:1/nobody"
    )
    with pytest.raises(SessionTokenError) as refused:
        tokens.token()
    assert refused.value.code == "unknown_resource"


def test_reuses_a_token_until_60_seconds_before_its_expiry(agentpass: AgentPass) -> None:
    clock = Clock()
    tokens = SessionTokens(agentpass.identity_url, agentpass.user_key, now=clock)
    first = tokens.token()
    clock.now += 300 - 60 - 0.001
    assert tokens.token() == first
    clock.now += 0.001
    second = tokens.token()
    assert second != first
    assert verify(agentpass.partner_key, second, agentpass.identity_url).ok


def test_reads_the_url_and_key_from_the_environment(
    agentpass: AgentPass, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPASS_URL", agentpass.identity_url)
    monkeypatch.setenv("AGENTPASS_USER_KEY", agentpass.user_key)
    result = verify(agentpass.partner_key, SessionTokens().token(), agentpass.identity_url)
    assert (result.ok, result.email) == (True, agentpass.email)


def save_cli_profile(url: str, key: str, config_home: Path, dpop_key: object = None) -> None:
    """What `agentpass login` leaves: credentials.json, by server URL, in the config folder,
    with the login's DPoP key (a private JWK) when one is given."""
    folder = config_home / "agentpass"
    folder.mkdir(parents=True, mode=0o700, exist_ok=True)
    credentials = folder / "credentials.json"
    saved = json.loads(credentials.read_text()) if credentials.exists() else {}
    saved[url] = {"key": key, "savedAt": "2026-11-27T10:00:00.000Z"}
    if dpop_key is not None:
        saved[url]["dpopKey"] = dpop_key
    credentials.write_text(json.dumps(saved, indent=2))


def test_reads_the_key_the_cli_saved(agentpass: AgentPass, tmp_path: Path) -> None:
    save_cli_profile(agentpass.identity_url, agentpass.user_key, tmp_path / "config")
    # The one server the CLI is logged in to is the URL, when none is given.
    token = SessionTokens().token()
    assert verify(agentpass.partner_key, token, agentpass.identity_url).email == agentpass.email
    assert SessionTokens(f"{agentpass.identity_url}/").token()


def test_asks_for_the_url_when_the_cli_is_logged_in_to_several_servers(tmp_path: Path) -> None:
    save_cli_profile("http://127.0.0.1:1", "apu_one", tmp_path / "config")
    save_cli_profile("http://127.0.0.1:2", "apu_two", tmp_path / "config")
    with pytest.raises(SessionTokenError, match="several AgentPass servers") as refused:
        SessionTokens()
    assert refused.value.code == "no_url"
    assert SessionTokens("http://127.0.0.1:2/").url == "http://127.0.0.1:2"


def test_reads_the_key_the_cli_itself_saved(agentpass: AgentPass, tmp_path: Path) -> None:
    """`agentpass login --with-key` saves the key where SessionTokens reads it."""
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
    token = SessionTokens(agentpass.identity_url).token()
    assert verify(agentpass.partner_key, token, agentpass.identity_url).email == agentpass.email


@pytest.mark.parametrize(
    ("given", "code"),
    [
        ({}, "no_url"),
        ({"url": "ftp://127.0.0.1"}, "invalid_url"),
        ({"url": "http://127.0.0.1:9"}, "no_user_key"),
    ],
)
def test_a_missing_setup_is_a_clear_error(given: dict, code: str) -> None:
    with pytest.raises(SessionTokenError) as refused:
        SessionTokens(**given)
    assert refused.value.code == code
    assert "AGENTPASS_" in str(refused.value) or code == "invalid_url"


def test_a_revoked_user_key_is_rejected(agentpass: AgentPass) -> None:
    key_id, user_key = agentpass.new_user_key()
    agentpass.admin("user-keys", "revoke", key_id)
    with pytest.raises(SessionTokenError) as refused:
        SessionTokens(agentpass.identity_url, user_key).token()
    assert refused.value.code == "key_rejected"


def test_an_unreachable_service_is_the_network_error(unreachable_url: str) -> None:
    with pytest.raises(SessionTokenError) as refused:
        SessionTokens(unreachable_url, "apu_" + "0" * 38).token()
    assert refused.value.code == "network_error"
    assert str(refused.value).startswith("Network error: cannot reach API")


def test_imports_without_requests_or_httpx() -> None:
    """No runtime dependency: the package loads where neither is installed."""
    src = Path(__file__).resolve().parents[1] / "src"
    script = (
        "import sys; sys.modules['requests'] = None; sys.modules['httpx'] = None\n"
        f"sys.path.insert(0, {str(src)!r})\n"
        "import agentpass, agentpass.asgi, agentpass.wsgi\n"
        "tokens = agentpass.SessionTokens('http://127.0.0.1:9', 'apu_key')\n"
        "try:\n    tokens.httpx_auth()\nexcept ImportError:\n    print('httpx is the caller\\'s')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "httpx is the caller's"), done.stderr
