"""The logins the ``agentpass`` command line saved (``agentpass login``), read only."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SavedProfile:
    """One saved login: the user key, and the private JWK of its DPoP key when the command line
    made one (``dpopKey``)."""

    key: str
    dpop_key: dict[str, Any] | None = None
    host_key: dict[str, Any] | None = None
    """The login's host key (``hostKey``, Ed25519), made by ``agentpass agents add``."""
    agents: dict[str, dict[str, Any]] | None = None
    """The agents saved under it by name (``agents``): each its ``id`` and private ``key``."""


def config_dir() -> Path:
    """Where the CLI keeps its files: ``$XDG_CONFIG_HOME/agentpass`` (default
    ``~/.config/agentpass``), or ``%APPDATA%\\agentpass`` on Windows."""
    appdata = os.environ.get("APPDATA")
    if sys.platform == "win32" and appdata:
        return Path(appdata) / "agentpass"
    xdg = os.environ.get("XDG_CONFIG_HOME")
    home = os.environ.get("HOME") or str(Path.home())
    return Path(xdg or os.path.join(home, ".config")) / "agentpass"


def saved_profiles() -> dict[str, SavedProfile]:
    """The saved logins by AgentPass URL (``credentials.json``); empty when there are none."""
    try:
        saved: Any = json.loads((config_dir() / "credentials.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(saved, dict):
        return {}
    return {
        url: SavedProfile(
            profile["key"],
            _dpop_key_of(profile),
            _dict_or_none(profile.get("hostKey")),
            _dict_or_none(profile.get("agents")),
        )
        for url, profile in saved.items()
        if isinstance(profile, dict) and isinstance(profile.get("key"), str)
    }


def _dict_or_none(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _dpop_key_of(profile: dict[str, Any]) -> dict[str, Any] | None:
    dpop_key = profile.get("dpopKey")
    return dpop_key if isinstance(dpop_key, dict) else None
