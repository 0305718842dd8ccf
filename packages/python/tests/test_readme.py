"""Every snippet of the README runs as written, against the real services."""

from __future__ import annotations

import contextlib
import io
from typing import Callable

import httpx
import pytest
from conftest import AgentPass
from fastapi.testclient import TestClient
from readme import snippet, snippets

from agentpass import SessionTokens

TESTED = {
    "python-install",
    "python-verify",
    "python-fastapi",
    "python-flask",
    "python-agent",
    "python-agent-dpop",
}


def run(name: str, **given: object) -> tuple[dict[str, object], str]:
    """Runs a snippet with `given` defined; its names and what it printed."""
    namespace: dict[str, object] = {"__name__": "snippet", **given}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(snippet(name), f"README.md:{name}", "exec"), namespace)
    return namespace, printed.getvalue()


def test_every_snippet_is_tested() -> None:
    assert set(snippets()) == TESTED  # python-install: test_packaging.py


@pytest.fixture
def partner_environment(agentpass: AgentPass, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPASS_URL", agentpass.identity_url)
    monkeypatch.setenv("AGENTPASS_PARTNER_KEY", agentpass.partner_key)


@pytest.mark.usefixtures("partner_environment")
def test_the_verify_snippet_prints_the_email(agentpass: AgentPass) -> None:
    _, printed = run("python-verify", session_token=agentpass.mint())
    assert printed == f"{agentpass.email}\n"
    _, printed = run("python-verify", session_token="aps_not-a-real-token")
    assert printed == "401 session_token_invalid\n"


@pytest.mark.usefixtures("partner_environment")
def test_the_fastapi_snippet_serves_the_person_and_refuses_the_rest(agentpass: AgentPass) -> None:
    namespace, _ = run("python-fastapi")
    client = TestClient(namespace["app"])
    served = client.get("/api/me", headers={"Authorization": f"Bearer {agentpass.mint()}"})
    assert (served.status_code, served.json()) == (200, {"email": agentpass.email})
    refused = client.get("/api/me", headers={"x-session-token": "aps_not-a-real-token"})
    assert (refused.status_code, refused.json()["code"]) == (401, "session_token_invalid")


@pytest.mark.usefixtures("partner_environment")
def test_the_flask_snippet_serves_the_person_and_refuses_the_rest(agentpass: AgentPass) -> None:
    namespace, _ = run("python-flask")
    client = namespace["app"].test_client()  # type: ignore[attr-defined]
    served = client.get("/api/me", headers={"x-session-token": agentpass.mint()})
    assert (served.status_code, served.get_json()) == (200, {"email": agentpass.email})
    refused = client.get("/api/me")
    assert (refused.status_code, refused.get_json()["code"]) == (401, "session_token_missing")


def test_the_agent_snippet_writes_a_note_finds_it_and_lists_the_mcp_tools(
    agentpass: AgentPass, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPASS_URL", agentpass.identity_url)
    monkeypatch.setenv("AGENTPASS_USER_KEY", agentpass.user_key)
    monkeypatch.setenv("NOTES_URL", agentpass.notes_url)
    before = httpx.get(
        f"{agentpass.notes_url}/api/notes",
        params={"search": "kube"},
        auth=SessionTokens().httpx_auth(),
    ).json()["total"]
    _, printed = run("python-agent")
    assert printed.splitlines() == [str(before + 1), "True"]


def test_the_dpop_agent_snippet_is_the_person_and_its_copied_token_nothing(
    agentpass: AgentPass,
    node_partner: Callable[[str, str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTPASS_URL", agentpass.identity_url)
    monkeypatch.setenv("AGENTPASS_USER_KEY", agentpass.user_key)
    monkeypatch.setenv("PARTNER_URL", node_partner(agentpass.identity_url, agentpass.partner_key))
    _, printed = run("python-agent-dpop")
    assert printed.splitlines() == [agentpass.email, "session_token_proof_required"]
