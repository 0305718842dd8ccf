"""``Verifier``: the partner key and URL given once, and a short cache of successes."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence, cast

from ._capabilities import AuthorizeResult, call_authorize, call_declare
from ._result import LOCAL_CODES, Refused, VerifyResult, failure
from ._verify import DEFAULT_TIMEOUT, call_verify, check_arguments, service_url, url_or_environment

MAX_CACHE_TTL = 5.0
"""The longest a success may be cached, in seconds, whatever ``cache_ttl`` asks: a revocation
reaches every partner within 5 seconds."""

_MAX_CACHED = 10_000

_logger = logging.getLogger("agentpass")


@dataclass(frozen=True)
class VerifierFault:
    """A fault that fails every verification, whatever the token: the partner's key was refused
    or revoked, or AgentPass cannot be reached, or what answers at its URL is not its API."""

    code: str
    """``partner_key_invalid``, ``partner_key_revoked``, ``network_error`` (the message names the
    URL and why) or ``unexpected_response`` (the URL, the status and its code)."""
    message: str


@dataclass(frozen=True)
class _Cached:
    result: VerifyResult
    until: float


class _Asking:
    """A verification in flight, which the calls for the same token that arrive meanwhile share."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: VerifyResult | None = None


class Verifier:
    """A verifier for a server: the partner key and URL given once, an optional short cache.

    ``partner_key`` defaults to ``AGENTPASS_PARTNER_KEY``, ``api_url`` to ``AGENTPASS_URL``; a
    setup that cannot work (no key, not a partner key, no URL) raises ``ValueError`` here, at
    start-up, rather than answering 503 to every request.

    ``cache_ttl`` is how long, in seconds, a success may be reused: the longest a revocation
    (of the person's key, or of yours) can take to reach you. Default 0 (off: every revocation
    holds on your next call); at most ``MAX_CACHE_TTL`` (5); never past the token's own
    expiry; failures are never cached, nor are verifications with a DPoP proof (a proof is good
    for one request only). ``timeout`` limits each call to AgentPass; past it the
    result is the network error. ``on_error`` hears of a fault that fails every verification
    (your key refused or revoked, AgentPass unreachable or not answering as itself), once per
    cause until a verification succeeds again (default: one line on the ``agentpass`` logger).
    ``now`` is the clock in seconds since the epoch, for tests.

    Thread-safe: one verifier serves every request of a process.

    Example::

        from agentpass import Verifier

        agentpass = Verifier(cache_ttl=5)
        result = agentpass.verify(request.headers.get("x-session-token"))
    """

    def __init__(
        self,
        partner_key: str | None = None,
        api_url: str | None = None,
        *,
        cache_ttl: float = 0.0,
        timeout: float = DEFAULT_TIMEOUT,
        on_error: Callable[[VerifierFault], None] | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        key = partner_key if partner_key is not None else os.environ.get("AGENTPASS_PARTNER_KEY")
        if not key:
            raise ValueError(
                "agentpass: no partner key: pass partner_key or set AGENTPASS_PARTNER_KEY"
            )
        if not key.startswith("apk_"):
            raise ValueError("agentpass: partner_key is not a partner key (apk_…)")
        base = service_url(url_or_environment(api_url))
        if isinstance(base, Refused):
            raise ValueError(f"agentpass: {base.error}")
        self._partner_key = key
        self._base = base
        self._endpoint = f"{base}/api/verify"
        self._timeout = timeout
        self._cache_ttl = min(MAX_CACHE_TTL, max(0.0, cache_ttl))
        self._on_error = on_error if on_error is not None else _report_on_log
        self._now = now
        self._lock = threading.Lock()
        # Keyed by a digest of the token: the cache never holds a usable token.
        self._cache: dict[str, _Cached] = {}
        self._asking: dict[str, _Asking] = {}
        self._reported: tuple[str, str] | None = None

    @property
    def api_url(self) -> str:
        """The AgentPass URL this verifier asks."""
        return self._base

    def verify(self, session_token: object, *, dpop: object = None) -> VerifyResult:
        """Same contract as ``verify()``: never raises."""
        refused = check_arguments(self._partner_key, session_token, self._base, dpop)
        if refused is not None:
            return refused
        token = str(session_token)
        if dpop is not None:
            # Each proof is judged afresh: its result is neither cached nor shared.
            return self._ask(token, cast("Mapping[str, str | None]", dpop))
        if self._cache_ttl == 0 or is_agent_jwt(token):
            # An agent's own JWT is good once: a cached answer would accept its replay.
            return self._ask(token)
        key = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit.until > self._now():
                return hit.result
            self._cache.pop(key, None)
            asking = self._asking.get(key)
            mine = asking is None
            if asking is None:
                asking = self._asking[key] = _Asking()
        if not mine:
            asking.done.wait()
            return asking.result if asking.result is not None else self._ask(token)
        try:
            asking.result = self._ask(token)
        finally:
            # Even should asking fail, the calls waiting on it are released.
            with self._lock:
                if asking.result is not None:
                    self._keep(key, asking.result)
                del self._asking[key]
            asking.done.set()
        return asking.result

    def authorize_capability(
        self, token: object, capability: object, arguments: object = None
    ) -> AuthorizeResult:
        """Asks AgentPass whether an agent may execute your capability (Agent Auth Protocol
        section 5.11): its JWT for the capability's location (good once), an active grant,
        arguments within the input schema and the grant's constraints. Never raises, never
        cached; a fault that is no verdict on the agent is a 503 ``on_error`` hears of."""
        result, fault = call_authorize(
            self._base, self._partner_key, self._timeout, token, capability, arguments
        )
        if fault is not None:
            self._report(_fault_result(fault), None if fault in _KEY_FAULTS else fault)
        return result

    def declare_capabilities(
        self, capabilities: Sequence[Mapping[str, Any]]
    ) -> tuple[bool, dict[str, Any]]:
        """Makes ``capabilities`` (each ``name``, ``description``, ``location``, ``input``…) the
        whole of what you offer agents: ``(True, answer)``, or ``(False, {"error", "message"})``.
        Never raises."""
        return call_declare(self._base, self._partner_key, self._timeout, capabilities)

    def _ask(self, token: str, dpop: Mapping[str, str | None] | None = None) -> VerifyResult:
        reasons: list[str] = []
        result = call_verify(
            self._endpoint, self._partner_key, token, self._timeout, reasons.append, dpop
        )
        self._report(result, reasons[0] if reasons else None)
        return result

    def _keep(self, key: str, result: VerifyResult) -> None:
        """Caches a success until ``cache_ttl`` from now, never past the token's own expiry."""
        if not result.ok or result.expires_at is None:
            return
        now = self._now()
        until = min(now + self._cache_ttl, result.expires_at.timestamp())
        if until <= now:
            return
        if len(self._cache) >= _MAX_CACHED:
            del self._cache[next(iter(self._cache))]
        self._cache[key] = _Cached(result, until)

    def _report(self, result: VerifyResult, no_answer: str | None) -> None:
        """Tells ``on_error`` of a fault that fails every verification, once per cause until a
        call succeeds again; ``no_answer`` is why no answer came back, when none did."""
        fault = _fault_of(result, self._base, no_answer)
        with self._lock:
            cause = (fault.code, fault.message) if fault is not None else None
            tell = cause is not None and cause != self._reported
            if fault is not None or result.ok:
                self._reported = cause
        if tell and fault is not None:
            self._on_error(fault)


# The verdicts on a token itself (or on its proof): the agent's fault, never the partner's.
_TOKEN_VERDICTS = (
    "session_token_invalid",
    "session_token_field_invalid",
    "session_token_proof_required",
    "session_token_proof_invalid",
    "dpop_field_invalid",
)


def _fault_of(result: VerifyResult, base: str, no_answer: str | None) -> VerifierFault | None:
    """The fault a result shows in the partner's setup or its link to AgentPass at ``base``;
    None for a success and for a verdict on the token."""
    if result.ok or result.code in _TOKEN_VERDICTS:
        return None
    if result.code == "partner_key_revoked":
        return VerifierFault(result.code, "AgentPass: your partner key has been revoked")
    if result.code in (
        "partner_key_invalid",
        "partner_key_missing",
        "partner_key_missing_or_invalid",
    ):
        return VerifierFault("partner_key_invalid", "AgentPass: your partner key is not valid")
    if result.code == LOCAL_CODES.NETWORK_ERROR:
        why = f" ({no_answer})" if no_answer else ""
        return VerifierFault("network_error", f"AgentPass cannot be reached at {base}{why}")
    return VerifierFault(
        "unexpected_response",
        f"AgentPass at {base} answered HTTP {result.status} ({result.code})"
        " instead of a verification",
    )


_KEY_FAULTS = ("partner_key_invalid", "partner_key_revoked")


def _fault_result(fault: str) -> VerifyResult:
    """A capability call's fault as the verification result ``_fault_of`` reads."""
    if fault in _KEY_FAULTS:
        return failure(401, fault, fault)
    if fault == "rate_limited" or fault.startswith("HTTP "):
        return failure(503, fault, LOCAL_CODES.UNEXPECTED_RESPONSE)
    return failure(0, fault, LOCAL_CODES.NETWORK_ERROR)


def _report_on_log(fault: VerifierFault) -> None:
    _logger.error(
        "%s (%s); every request will answer 503 until it is fixed", fault.message, fault.code
    )


def is_agent_jwt(token: str) -> bool:
    """Whether a token is an agent's JWT (its header says ``typ: agent+jwt``), read without
    trusting it, only to know that it must never be cached."""
    if not token.startswith("eyJ"):
        return False
    head = token.split(".", 1)[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except ValueError:
        return False
    return isinstance(header, dict) and header.get("typ") == "agent+jwt"
