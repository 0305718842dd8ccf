"""Verifier.authorize_capability (issue 54): a Python partner declares a capability and its
location asks AgentPass whether an agent may execute it, getting section 5.11's refusals to
answer as its own; no call raises, and a fault that is no verdict on the agent is a 503."""

from __future__ import annotations

from conftest import AgentPass
from test_agents import new_key, register_agent

from agentpass import Agent, AuthorizeResult, Verifier, VerifierFault
from agentpass._agents import agent_jwt

RESOURCE = "https://python-capabilities.example"
LOCATION = f"{RESOURCE}/agent/execute"
SHIP = {
    "name": "ship_parcel",
    "description": "Ship a parcel",
    "location": LOCATION,
    "input": {
        "type": "object",
        "required": ["weight"],
        "properties": {"weight": {"type": "number"}},
    },
}


def test_a_location_asks_agentpass_before_it_executes(agentpass: AgentPass) -> None:
    agentpass.admin("partner-resources", "add", agentpass.partner_id, RESOURCE)
    verifier = Verifier(agentpass.partner_key, agentpass.identity_url)
    declared, answer = verifier.declare_capabilities([SHIP])
    assert declared, answer
    host_key = new_key()
    agent_id, agent_key = register_agent(
        agentpass,
        host_key,
        "shipper",
        [{"name": "ship_parcel", "constraints": {"weight": {"max": 20}}}],
    )

    allowed = verifier.authorize_capability(
        agent_jwt(agent_key, host_key, agent_id, LOCATION), "ship_parcel", {"weight": 3}
    )
    assert allowed == AuthorizeResult(
        ok=True,
        email=agentpass.email,
        agent=Agent(agent_id, "shipper"),
        capability="ship_parcel",
        constraints={"weight": {"max": 20}},
    )
    heavy = verifier.authorize_capability(
        agent_jwt(agent_key, host_key, agent_id, LOCATION), "ship_parcel", {"weight": 30}
    )
    assert (heavy.ok, heavy.status, heavy.error) == (False, 403, "constraint_violated")
    assert heavy.body["violations"] == [
        {"field": "weight", "constraint": {"max": 20}, "actual": 30}
    ]
    wrong_type = verifier.authorize_capability(
        agent_jwt(agent_key, host_key, agent_id, LOCATION), "ship_parcel", {"weight": "3"}
    )
    assert (wrong_type.status, wrong_type.error) == (400, "invalid_request")
    replayed_jwt = agent_jwt(agent_key, host_key, agent_id, LOCATION)
    assert verifier.authorize_capability(replayed_jwt, "ship_parcel", {"weight": 1}).ok
    replayed = verifier.authorize_capability(replayed_jwt, "ship_parcel", {"weight": 1})
    assert (replayed.status, replayed.error) == (401, "invalid_jwt")


def test_never_raises_and_a_fault_is_no_verdict(
    agentpass: AgentPass, unreachable_url: str
) -> None:
    faults: list[VerifierFault] = []
    verifier = Verifier(agentpass.partner_key, agentpass.identity_url, on_error=faults.append)
    for token, capability, arguments in (
        (None, "ship_parcel", {}),
        (42, "ship_parcel", {}),
        ("x", "", {}),
        ("x", "ship_parcel", ["not", "an", "object"]),
    ):
        refused = verifier.authorize_capability(token, capability, arguments)
        assert not refused.ok and refused.status in (400, 401)
    down = Verifier(agentpass.partner_key, unreachable_url, on_error=faults.append)
    result = down.authorize_capability("eyJ.x.y", "ship_parcel", {})
    assert (result.status, result.error) == (503, "temporarily_unavailable")
    down.authorize_capability("eyJ.x.y", "ship_parcel", {})
    assert [fault.code for fault in faults] == ["network_error"]
    stranger = Verifier("apk_" + "x" * 43, agentpass.identity_url, on_error=faults.append)
    refused_key = stranger.authorize_capability("eyJ.x.y", "ship_parcel", {})
    assert refused_key.status == 503
    assert faults[-1].code == "partner_key_invalid"
