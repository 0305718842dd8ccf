"""One POST (or PUT) to AgentPass, answered within a time limit, never raising."""

from __future__ import annotations

import errno
import json
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from typing import Any, Union


@dataclass(frozen=True)
class ServiceAnswer:
    """An answer of AgentPass: its status, its headers, and its body if that is a JSON object."""

    status: int
    headers: Message
    body: dict[str, Any] | None


@dataclass(frozen=True)
class NoAnswer:
    """No answer came back; ``reason`` says why in a few stable words, for logs."""

    reason: str


PostOutcome = Union[ServiceAnswer, NoAnswer]


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """AgentPass never redirects its API: a redirect is someone else answering, never followed."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_RefuseRedirects)


def post_to_agentpass(
    url: str,
    *,
    content_type: str,
    data: bytes,
    timeout: float,
    bearer: str | None = None,
    dpop: str | None = None,
    method: str = "POST",
) -> PostOutcome:
    """POSTs ``data`` to ``url``, with ``bearer`` as the credential and ``dpop`` as the ``DPoP``
    proof when given. ``NoAnswer`` when no whole answer came back (no connection, the time limit,
    a redirect, a body cut off), which callers report as the network error."""
    headers = {"Content-Type": content_type, "Accept": "application/json"}
    if bearer is not None:
        headers["Authorization"] = f"Bearer {bearer}"
    if dpop is not None:
        headers["DPoP"] = dpop
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return ServiceAnswer(response.status, response.headers, _parse_json(response.read()))
    except urllib.error.HTTPError as error:
        if 300 <= error.code < 400:
            return NoAnswer(f"redirected (HTTP {error.code})")
        try:
            return ServiceAnswer(error.code, error.headers, _parse_json(error.read()))
        except Exception as cut_off:  # the error's body was cut off: no whole answer came back
            return NoAnswer(_reason_of(cut_off, timeout))
    except Exception as failed:  # refused, reset, timed out, unresolvable: every way of no answer
        return NoAnswer(_reason_of(failed, timeout))


def _reason_of(error: BaseException, timeout: float) -> str:
    """Why a request failed: the system's error code where there is one (``ECONNREFUSED``), so
    that one cause reads the same on every request."""
    cause = error.reason if isinstance(error, urllib.error.URLError) else error
    if isinstance(cause, (socket.timeout, TimeoutError)):
        return f"timed out after {round(timeout * 1000)} ms"
    code = getattr(cause, "errno", None)
    if isinstance(code, int) and code in errno.errorcode:
        return errno.errorcode[code]
    return str(cause) or type(cause).__name__


def _parse_json(data: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
