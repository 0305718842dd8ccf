"""Session fixtures: the real identity service and notes API, an account with a user key, and
two partners (the notes API, and the Python partner these tests play) with partner keys."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest
from services import IDENTITY_BIN, NOTES_BIN, Server, free_port, node_env, run_node, start_server

from agentpass import SessionTokens

EMAIL = "ada@example.com"

# The tests mint and verify far more than a person would: the per-minute budgets are raised.
RAISED_LIMITS = {
    "MINTS_PER_MINUTE": "100000",
    "FAILED_VERIFIES_PER_MINUTE": "100000",
    "BAD_KEYS_PER_MINUTE": "100000",
    "REVOCATIONS_PER_MINUTE": "100000",
}


@dataclass
class AgentPass:
    identity_url: str
    notes_url: str
    email: str
    user_key: str
    partner_id: str
    partner_key: str
    notes_partner_id: str
    identity_env: dict[str, str]

    def admin(self, *args: str) -> str:
        """``agentpass-server <args>`` against this identity service."""
        return run_node([IDENTITY_BIN, *args], self.identity_env)

    def new_user_key(self) -> tuple[str, str]:
        """A fresh user key of the account: its id (to revoke it) and the key."""
        created = json.loads(self.admin("user-keys", "create", self.email, "--json"))
        return created["id"], created["key"]

    def new_partner_key(self) -> tuple[str, str]:
        """A fresh key of the Python partner: its id (to revoke it) and the key."""
        created = json.loads(self.admin("partner-keys", "create", self.partner_id, "--json"))
        return created["id"], created["key"]

    def mint(self, user_key: str | None = None, resource: str | None = None) -> str:
        """A fresh session token of the account (by its main key unless another is given)."""
        return SessionTokens(
            self.identity_url, user_key or self.user_key, resource=resource
        ).token()


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the machine's AgentPass settings or the CLI's saved keys."""
    for name in ("AGENTPASS_URL", "AGENTPASS_PARTNER_KEY", "AGENTPASS_USER_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture(scope="session")
def agentpass(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentPass]:
    data = tmp_path_factory.mktemp("agentpass")
    # DPoP proofs name the URL they are for: each service must know its own, PUBLIC_URL.
    port = free_port()
    identity_env = node_env(
        DATA_DIR=str(data / "identity"),
        PORT=str(port),
        PUBLIC_URL=f"http://127.0.0.1:{port}",
        HOST="127.0.0.1",
        LOG_LEVEL="info",
        **RAISED_LIMITS,
    )
    notes_port = free_port()
    notes_env_base = node_env(
        DATA_DIR=str(data / "notes"),
        PORT=str(notes_port),
        PUBLIC_URL=f"http://127.0.0.1:{notes_port}",
        HOST="127.0.0.1",
        LOG_LEVEL="info",
    )

    def identity(*args: str) -> str:
        return run_node([IDENTITY_BIN, *args], identity_env)

    def new_partner(name: str) -> tuple[str, str]:
        partner = json.loads(
            identity("partners", "create", "--name", name, "--owner", EMAIL, "--json")
        )
        key = json.loads(identity("partner-keys", "create", partner["id"], "--json"))["key"]
        return partner["id"], key

    identity("migrate")
    identity("accounts", "create", EMAIL)
    user_key = identity("user-keys", "create", EMAIL)
    partner_id, partner_key = new_partner("Python partner")
    notes_partner_id, notes_partner_key = new_partner("Notes")
    servers: list[Server] = []
    try:
        servers.append(start_server("identity", [IDENTITY_BIN, "serve"], identity_env))
        identity_url = servers[0].url
        notes_env = {
            **notes_env_base,
            "AGENTPASS_URL": identity_url,
            "AGENTPASS_PARTNER_KEY": notes_partner_key,
        }
        run_node([NOTES_BIN, "migrate"], notes_env)
        run_node([NOTES_BIN, "users", "add", EMAIL], notes_env)
        servers.append(start_server("notes", [NOTES_BIN, "serve"], notes_env))
        notes_url = servers[1].url
        for resource in (notes_url, f"{notes_url}/mcp"):
            identity("partner-resources", "add", notes_partner_id, resource)
        yield AgentPass(
            identity_url=identity_url,
            notes_url=notes_url,
            email=EMAIL,
            user_key=user_key,
            partner_id=partner_id,
            partner_key=partner_key,
            notes_partner_id=notes_partner_id,
            identity_env=identity_env,
        )
    finally:
        for server in reversed(servers):
            server.stop()


@pytest.fixture(scope="session")
def unreachable_url() -> Iterator[str]:
    """A URL where nothing answers: a port held bound but not listening refuses connections."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}"


@pytest.fixture(scope="session")
def node_partner(agentpass: AgentPass) -> Iterator[Callable[[str, str], str]]:
    """Starts the Node reference partner (Express + agentPassAuth) for a URL and partner key;
    its URL. One process per setting, stopped at the end of the session."""
    started: dict[tuple[str, str], Server] = {}

    def start(api_url: str, partner_key: str) -> str:
        if (api_url, partner_key) not in started:
            env = node_env(AGENTPASS_URL=api_url, AGENTPASS_PARTNER_KEY=partner_key)
            started[api_url, partner_key] = start_server(
                "node partner", ["packages/python/tests/node-partner.ts"], env
            )
        return started[api_url, partner_key].url

    yield start
    for server in started.values():
        server.stop()
