"""Capabilities (Agent Auth Protocol): a partner declares what it offers agents, and its
location asks AgentPass whether an agent may execute one with these arguments."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ._post import NoAnswer, post_to_agentpass
from ._result import Agent

_PARTNER_REFUSALS = ("partner_key_invalid", "partner_key_revoked", "rate_limited")


@dataclass(frozen=True)
class AuthorizeResult:
    """Whether an agent may execute your capability, as AgentPass judged it.

    ``ok`` with the person's ``email``, the ``agent`` and the grant's ``constraints`` (already
    enforced); or not ``ok`` with section 5.11's refusal to answer as your own: ``status`` and
    ``body`` (``{"error", "message", "violations"?}``). AgentPass out of reach, or your key
    refused, is 503 ``temporarily_unavailable``: no verdict on the agent.

    Example::

        allowed = agentpass.authorize_capability(token, body["capability"], body.get("arguments"))
        if not allowed.ok:
            return JSONResponse(allowed.body, status_code=allowed.status)
    """

    ok: bool
    status: int = 200
    email: str | None = None
    agent: Agent | None = None
    capability: str | None = None
    constraints: dict[str, Any] | None = None
    error: str | None = None
    body: dict[str, Any] = field(default_factory=dict)


def _refusal(status: int, error: str, message: str) -> AuthorizeResult:
    return AuthorizeResult(
        ok=False, status=status, error=error, body={"error": error, "message": message}
    )


_UNAVAILABLE = _refusal(503, "temporarily_unavailable", "AgentPass could not be asked")


def call_authorize(
    base: str,
    partner_key: str,
    timeout: float,
    token: object,
    capability: object,
    arguments: object,
) -> tuple[AuthorizeResult, str | None]:
    """Asks ``POST /capability/authorize``; never raises. Also answers the partner's own fault
    (a refused key's code, or why no answer came), for the verifier to report."""
    if not isinstance(token, str) or token == "":
        return _refusal(401, "invalid_jwt", "Send an agent JWT as Authorization: Bearer"), None
    if not isinstance(capability, str) or capability == "":
        return _refusal(400, "invalid_request", "capability must be a capability's name"), None
    if arguments is not None and not isinstance(arguments, Mapping):
        return _refusal(400, "invalid_request", "arguments must be an object"), None
    payload: dict[str, Any] = {"token": token, "capability": capability}
    if arguments is not None:
        payload["arguments"] = dict(arguments)
    answer = post_to_agentpass(
        f"{base}/capability/authorize",
        content_type="application/json",
        data=json.dumps(payload).encode(),
        timeout=timeout,
        bearer=partner_key,
    )
    if isinstance(answer, NoAnswer):
        return _UNAVAILABLE, answer.reason
    body = answer.body
    if body is None:
        return _UNAVAILABLE, f"HTTP {answer.status}"
    if answer.status == 200 and isinstance(body.get("email"), str):
        constraints = body.get("constraints")
        return AuthorizeResult(
            ok=True,
            email=body["email"],
            agent=Agent(str(body.get("agent_id", "")), str(body.get("agent_name", ""))),
            capability=capability,
            constraints=constraints if isinstance(constraints, dict) else None,
        ), None
    error = body.get("error")
    if 400 <= answer.status < 500 and isinstance(error, str):
        if error in _PARTNER_REFUSALS:
            return _UNAVAILABLE, error
        return AuthorizeResult(ok=False, status=answer.status, error=error, body=body), None
    return _UNAVAILABLE, f"HTTP {answer.status}"


def call_declare(
    base: str, partner_key: str, timeout: float, capabilities: Sequence[Mapping[str, Any]]
) -> tuple[bool, dict[str, Any]]:
    """``PUT /partner/capabilities``: ``(True, answer)`` or ``(False, {"error", "message"})``;
    never raises."""
    answer = post_to_agentpass(
        f"{base}/partner/capabilities",
        content_type="application/json",
        data=json.dumps({"capabilities": [dict(c) for c in capabilities]}).encode(),
        timeout=timeout,
        bearer=partner_key,
        method="PUT",
    )
    if isinstance(answer, NoAnswer) or answer.body is None:
        return False, dict(_UNAVAILABLE.body)
    return answer.status == 200, answer.body
