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
        url: SavedProfile(profile["key"], _dpop_key_of(profile))
        for url, profile in saved.items()
        if isinstance(profile, dict) and isinstance(profile.get("key"), str)
    }


def _dpop_key_of(profile: dict[str, Any]) -> dict[str, Any] | None:
    dpop_key = profile.get("dpopKey")
    return dpop_key if isinstance(dpop_key, dict) else None
