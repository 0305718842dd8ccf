"""verify(partner_key, session_token, api_url=None), against the real identity service."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from conftest import AgentPass

from agentpass import NETWORK_ERROR, verify


def test_answers_the_email_of_a_valid_token(agentpass: AgentPass) -> None:
    result = verify(agentpass.partner_key, agentpass.mint(), agentpass.identity_url)
    assert (result.ok, result.email, result.status, result.error, result.code) == (
        True,
        agentpass.email,
        200,
        None,
        None,
    )
    assert result.expires_at is not None and result.expires_at > datetime.now(timezone.utc)


def test_takes_the_url_from_AGENTPASS_URL(
    agentpass: AgentPass, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPASS_URL", f"{agentpass.identity_url}/")
    result = verify(agentpass.partner_key, agentpass.mint())
    assert result.ok and result.email == agentpass.email


def test_answers_401_for_a_token_agentpass_does_not_know(agentpass: AgentPass) -> None:
    result = verify(agentpass.partner_key, "aps_not-a-real-token", agentpass.identity_url)
    assert (result.ok, result.status, result.error, result.code) == (
        False,
        401,
        "Invalid or expired session token",
        "session_token_invalid",
    )


def test_answers_401_for_a_token_bound_to_another_partner(agentpass: AgentPass) -> None:
    bound_to_notes = agentpass.mint(resource=agentpass.notes_url)
    result = verify(agentpass.partner_key, bound_to_notes, agentpass.identity_url)
    assert (result.status, result.code) == (401, "session_token_invalid")


def test_answers_403_once_the_partner_key_is_revoked(agentpass: AgentPass) -> None:
    key_id, key = agentpass.new_partner_key()
    token = agentpass.mint()
    assert verify(key, token, agentpass.identity_url).ok
    agentpass.admin("partner-keys", "revoke", key_id)
    result = verify(key, token, agentpass.identity_url)
    assert (result.ok, result.status, result.error, result.code) == (
        False,
        403,
        "Partner key has been revoked",
        "partner_key_revoked",
    )


def test_answers_401_for_a_partner_key_agentpass_does_not_know(agentpass: AgentPass) -> None:
    result = verify("apk_" + "x" * 40, agentpass.mint(), agentpass.identity_url)
    assert (result.ok, result.status, result.error) == (False, 401, "Invalid partner key")


def test_answers_an_unreachable_service_with_the_network_error(unreachable_url: str) -> None:
    result = verify("apk_" + "x" * 40, "aps_token", unreachable_url)
    assert (result.ok, result.status, result.error, result.code) == (
        False,
        0,
        NETWORK_ERROR,
        "network_error",
    )
    assert NETWORK_ERROR == "Network error: cannot reach API"


def test_answers_a_missing_url_with_a_result(monkeypatch: pytest.MonkeyPatch) -> None:
    result = verify("apk_key", "aps_token")
    assert (result.ok, result.status, result.code) == (False, 0, "api_url_missing")
    assert result.error == "No AgentPass URL: pass api_url or set AGENTPASS_URL"


@pytest.mark.parametrize(
    ("partner_key", "session_token", "api_url", "status", "code"),
    [
        (None, None, None, 0, "api_url_missing"),
        (None, None, "http://127.0.0.1:9", 401, "partner_key_missing"),
        (12, "aps_token", "http://127.0.0.1:9", 401, "partner_key_missing"),
        ("   ", "aps_token", "http://127.0.0.1:9", 401, "partner_key_missing"),
        ("apk_a\r\nX-Injected: 1", "aps_token", "http://127.0.0.1:9", 401, "partner_key_invalid"),
        ("apk_key", None, "http://127.0.0.1:9", 400, "session_token_field_invalid"),
        ("apk_key", "", "http://127.0.0.1:9", 400, "session_token_field_invalid"),
        ("apk_key", ["aps_token"], "http://127.0.0.1:9", 400, "session_token_field_invalid"),
        ("apk_key", "aps_token", 42, 0, "invalid_api_url"),
        ("apk_key", "aps_token", "ftp://127.0.0.1", 0, "invalid_api_url"),
        ("apk_key", "aps_token", "not a url", 0, "invalid_api_url"),
        ("apk_key", "aps_token", "http://[::1", 0, "invalid_api_url"),
        ("apk_key", "aps_token", "http://127.0.0.1:99999", 0, "invalid_api_url"),
    ],
)
def test_never_raises_and_refuses_what_the_service_would_refuse(
    partner_key: object, session_token: object, api_url: object, status: int, code: str
) -> None:
    result = verify(partner_key, session_token, api_url)
    assert (result.ok, result.status, result.code) == (False, status, code)
    assert isinstance(result.error, str) and result.error


def test_the_service_answers_the_same_for_what_is_refused_locally(agentpass: AgentPass) -> None:
    """The local refusals carry the service's own statuses and messages."""
    missing_token = verify(agentpass.partner_key, "", agentpass.identity_url)
    assert (missing_token.status, missing_token.error) == (400, "Missing or invalid sessionToken")
    missing_key = verify("", "aps_token", agentpass.identity_url)
    assert (missing_key.status, missing_key.error) == (401, "Missing partner key")
