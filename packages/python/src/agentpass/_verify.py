"""``verify()``: who a session token belongs to, asked of AgentPass. Never raises."""

from __future__ import annotations

import json
import os
from datetime import datetime
from typing import Any, Callable, Mapping, cast
from urllib.parse import urlsplit

from ._post import NoAnswer, post_to_agentpass
from ._result import LOCAL_CODES, NETWORK_ERROR, Agent, Refused, Verified, VerifyResult, failure

DEFAULT_TIMEOUT = 5.0
"""Seconds a verification may take before it counts as a network failure."""

TOKEN_EXPIRES_HEADER = "AgentPass-Token-Expires-At"

_DEFAULT_PORTS = {"http": 80, "https": 443}


def verify(
    partner_key: object, session_token: object, api_url: object = None, *, dpop: object = None
) -> VerifyResult:
    """Asks AgentPass who a session token belongs to. Never raises, whatever the arguments.

    ``partner_key`` is your partner key (``apk_…``), sent as a Bearer credential;
    ``session_token`` the token the agent sent you; ``api_url`` the AgentPass URL, by default
    the ``AGENTPASS_URL`` environment variable. The result is ``ok`` with ``email``, or not
    ``ok`` with the service's ``error`` and ``code`` (``Network error: cannot reach API`` and
    ``network_error`` when the service could not be reached; ``status`` is then 0).

    ``dpop`` is ``{"proof": …, "method": …, "url": …}`` when the agent sent
    ``Authorization: DPoP``: its ``DPoP`` header (None when it had none), and the method and
    absolute URL of the request you received (your public one behind a proxy). AgentPass checks
    the proof of a token bound to a key (401 ``session_token_proof_required`` without one,
    ``session_token_proof_invalid`` when it fails, the error saying which check) and ignores it
    for an unbound token. A ``dpop`` of another shape is 400 ``dpop_field_invalid``.

    Example::

        from agentpass import verify

        result = verify(os.environ["AGENTPASS_PARTNER_KEY"], request.headers.get("x-session-token"))
        if not result.ok:
            return {"error": result.error}, 401
        user = db.users.find_by_email(result.email)
    """
    base = service_url(url_or_environment(api_url))
    refused = check_arguments(partner_key, session_token, base, dpop)
    if refused is not None:
        return refused
    # Checked above: the URL, the key and the token are strings, dpop a proper one or None.
    endpoint = f"{cast(str, base)}/api/verify"
    return call_verify(
        endpoint,
        cast(str, partner_key),
        cast(str, session_token),
        DEFAULT_TIMEOUT,
        dpop=cast("Mapping[str, str | None] | None", dpop),
    )


def url_or_environment(api_url: object) -> object:
    """``api_url``, or ``AGENTPASS_URL`` when it is None or empty. No built-in default: a URL
    this project does not control would receive every forgetful partner's key and tokens."""
    if api_url is None or (isinstance(api_url, str) and api_url == ""):
        return os.environ.get("AGENTPASS_URL")
    return api_url


def service_url(api_url: object) -> str | Refused:
    """The AgentPass URL as ``scheme://host[:port][/path]`` without a trailing slash, or the
    failure to report when it is missing (None or empty) or not an http(s) URL."""
    if api_url is None or (isinstance(api_url, str) and api_url == ""):
        return failure(
            0, "No AgentPass URL: pass api_url or set AGENTPASS_URL", LOCAL_CODES.API_URL_MISSING
        )
    invalid = failure(0, "Invalid api_url: expected an http(s) URL", LOCAL_CODES.INVALID_API_URL)
    if not isinstance(api_url, str) or any(c.isspace() or ord(c) < 0x20 for c in api_url):
        return invalid
    try:
        parts = urlsplit(api_url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return invalid
    if parts.scheme not in _DEFAULT_PORTS or not host:
        return invalid
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS[parts.scheme]:
        netloc += f":{port}"
    return f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}"


def check_arguments(
    partner_key: object, session_token: object, base: str | Refused, dpop: object = None
) -> Refused | None:
    """Refuses, without a request, what the service would refuse anyway (with its own messages
    and statuses), and a missing or malformed URL."""
    setup = check_setup(partner_key, base)
    if setup is not None:
        return setup
    if not isinstance(session_token, str) or session_token == "":
        return failure(400, "Missing or invalid sessionToken", "session_token_field_invalid")
    if dpop is not None and not _is_request_proof(dpop):
        return failure(400, "Invalid dpop: expected {proof, method, url}", "dpop_field_invalid")
    return None


_MAX_DPOP_FIELD_CHARS = 8192
"""The longest proof, method or URL AgentPass takes."""


def _is_request_proof(dpop: object) -> bool:
    """``{"proof", "method", "url"}`` as AgentPass takes it: the proof a string or None (no
    ``DPoP`` header), the method a string, the URL an absolute http(s) one."""
    if not isinstance(dpop, Mapping):
        return False
    proof, method, url = dpop.get("proof"), dpop.get("method"), dpop.get("url")

    def is_field(value: object) -> bool:
        return isinstance(value, str) and 0 < len(value) <= _MAX_DPOP_FIELD_CHARS

    return (
        (proof is None or proof == "" or is_field(proof))
        and is_field(method)
        and is_field(url)
        and isinstance(service_url(url), str)
    )


def check_setup(partner_key: object, base: str | Refused) -> Refused | None:
    if isinstance(base, Refused):
        return base
    if not isinstance(partner_key, str) or partner_key.strip() == "":
        return failure(401, "Missing partner key", "partner_key_missing")
    # A line break would split the Authorization header: the service could never accept it.
    if any(c in partner_key for c in "\r\n\0"):
        return failure(401, "Invalid partner key", "partner_key_invalid")
    return None


def call_verify(
    endpoint: str,
    partner_key: str,
    session_token: str,
    timeout: float,
    on_no_answer: Callable[[str], None] | None = None,
    dpop: Mapping[str, str | None] | None = None,
) -> VerifyResult:
    """One ``POST /api/verify``, mapped to a result: an error answer passes its ``error`` and
    ``code`` through unchanged. ``on_no_answer`` hears why no answer came back, for logs.
    ``dpop`` goes along when it has a proof; without one the request had none, as AgentPass
    takes a call without ``dpop`` (a bound token is then refused)."""
    request: dict[str, object] = {"sessionToken": session_token}
    if dpop is not None and dpop.get("proof"):
        request["dpop"] = {"proof": dpop["proof"], "method": dpop["method"], "url": dpop["url"]}
    answer = post_to_agentpass(
        endpoint,
        content_type="application/json",
        data=json.dumps(request).encode(),
        timeout=timeout,
        bearer=partner_key,
    )
    if isinstance(answer, NoAnswer):
        if on_no_answer is not None:
            on_no_answer(answer.reason)
        return failure(0, NETWORK_ERROR, LOCAL_CODES.NETWORK_ERROR)
    body = answer.body or {}
    email = body.get("email")
    if answer.status == 200 and isinstance(email, str) and email != "":
        expires_at = _parse_date(answer.headers.get(TOKEN_EXPIRES_HEADER))
        return Verified(email=email, status=200, expires_at=expires_at, agent=_agent_of(body))
    error = body.get("error")
    if answer.status != 200 and isinstance(error, str):
        code = body.get("code")
        return failure(
            answer.status, error, code if isinstance(code, str) else LOCAL_CODES.UNEXPECTED_RESPONSE
        )
    return failure(
        answer.status,
        f"Unexpected response from AgentPass (HTTP {answer.status})",
        LOCAL_CODES.UNEXPECTED_RESPONSE,
    )


def _parse_date(value: str | None) -> datetime | None:
    """An ISO 8601 time such as ``2026-11-27T10:00:00.000Z``; None when it is not one."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _agent_of(body: Mapping[str, Any]) -> Agent | None:
    """The answer's ``agent``, when it is one: an id and a name, both strings."""
    agent = body.get("agent")
    if not isinstance(agent, Mapping):
        return None
    agent_id, name = agent.get("id"), agent.get("name")
    return Agent(agent_id, name) if isinstance(agent_id, str) and isinstance(name, str) else None
