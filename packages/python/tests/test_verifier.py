"""Verifier: the partner key and URL given once, and the cache rule (at most 5 s, never past
the token's expiry, failures never), against the real identity service."""

from __future__ import annotations

import pytest
from conftest import AgentPass

from agentpass import Verifier, VerifierFault, verify


class Clock:
    """A clock the test moves: seconds since the epoch."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_refuses_a_setup_that_cannot_work(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="no partner key"):
        Verifier(api_url="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="not a partner key"):
        Verifier("apu_a_user_key", "http://127.0.0.1:9")
    with pytest.raises(ValueError, match="No AgentPass URL"):
        Verifier("apk_key")
    with pytest.raises(ValueError, match="Invalid api_url"):
        Verifier("apk_key", "ftp://127.0.0.1")


def test_takes_its_setup_from_the_environment(
    agentpass: AgentPass, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPASS_PARTNER_KEY", agentpass.partner_key)
    monkeypatch.setenv("AGENTPASS_URL", agentpass.identity_url)
    result = Verifier().verify(agentpass.mint())
    assert (result.ok, result.email) == (True, agentpass.email)


def test_without_a_cache_a_revocation_holds_on_the_next_call(agentpass: AgentPass) -> None:
    key_id, user_key = agentpass.new_user_key()
    token = agentpass.mint(user_key)
    verifier = Verifier(agentpass.partner_key, agentpass.identity_url)
    assert verifier.verify(token).ok
    agentpass.admin("user-keys", "revoke", key_id)
    result = verifier.verify(token)
    assert (result.ok, result.code) == (False, "session_token_invalid")


def revocable_token(agentpass: AgentPass) -> tuple[str, str, float]:
    """A token of a user key of its own (to revoke it): the key's id, the token, its expiry."""
    key_id, user_key = agentpass.new_user_key()
    token = agentpass.mint(user_key)
    first = verify(agentpass.partner_key, token, agentpass.identity_url)
    assert first.ok and first.expires_at is not None
    return key_id, token, first.expires_at.timestamp()


@pytest.mark.parametrize(
    ("cache_ttl", "seconds_left"),
    [(60, 100), (5, 2)],
    ids=["at most 5 s whatever cache_ttl asks", "never past the token's expiry"],
)
def test_a_success_is_reused_until_its_deadline_and_no_longer(
    agentpass: AgentPass, cache_ttl: float, seconds_left: float
) -> None:
    key_id, token, expiry = revocable_token(agentpass)
    clock = Clock(expiry - seconds_left)
    # The rule: a success is reused at most 5 s, never past the token's expiry.
    deadline = min(clock.now + 5, expiry)
    verifier = Verifier(
        agentpass.partner_key, agentpass.identity_url, cache_ttl=cache_ttl, now=clock
    )
    assert verifier.verify(token).ok
    agentpass.admin("user-keys", "revoke", key_id)
    clock.now = deadline - 0.001
    assert verifier.verify(token).ok, "until the deadline the cached success answers"
    clock.now = deadline
    result = verifier.verify(token)
    assert (result.ok, result.code) == (False, "session_token_invalid")


def test_tells_on_error_of_a_revoked_partner_key_once(agentpass: AgentPass) -> None:
    key_id, key = agentpass.new_partner_key()
    faults: list[VerifierFault] = []
    verifier = Verifier(key, agentpass.identity_url, on_error=faults.append)
    token = agentpass.mint()
    assert verifier.verify(token).ok
    agentpass.admin("partner-keys", "revoke", key_id)
    for _ in range(3):
        assert verifier.verify(token).code == "partner_key_revoked"
    assert faults == [
        VerifierFault("partner_key_revoked", "AgentPass: your partner key has been revoked")
    ]


def test_tells_on_error_of_an_unreachable_service_once_naming_the_url(unreachable_url: str) -> None:
    faults: list[VerifierFault] = []
    verifier = Verifier("apk_" + "0" * 40, unreachable_url, on_error=faults.append)
    for _ in range(2):
        assert verifier.verify("aps_token").code == "network_error"
    assert faults == [
        VerifierFault(
            "network_error", f"AgentPass cannot be reached at {unreachable_url} (ECONNREFUSED)"
        )
    ]


def test_a_token_agentpass_rejects_is_no_fault_of_the_partner(agentpass: AgentPass) -> None:
    faults: list[VerifierFault] = []
    verifier = Verifier(agentpass.partner_key, agentpass.identity_url, on_error=faults.append)
    assert verifier.verify("aps_not-a-real-token").code == "session_token_invalid"
    assert verifier.verify("").code == "session_token_field_invalid"
    assert faults == []
