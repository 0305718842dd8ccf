"""The package builds an sdist and a wheel (Debian's python3-build, no network), and installs in
a fresh venv as the README's install snippet says. Both run on a copy of the package, so that
the build's by-products (build/, *.egg-info) never land in the working tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from readme import snippet

PACKAGE = Path(__file__).resolve().parents[1]


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """A checkout-like folder holding packages/python without its tests and caches."""
    copy = tmp_path / "checkout" / "packages" / "python"
    shutil.copytree(
        PACKAGE,
        copy,
        ignore=shutil.ignore_patterns("tests", "__pycache__", "*.egg-info", "build", "dist", ".*"),
    )
    return copy


def test_builds_an_sdist_and_a_typed_wheel(package_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(package_copy)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = out / "agentpass-0.1.0-py3-none-any.whl"
    sdist = out / "agentpass-0.1.0.tar.gz"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read("agentpass-0.1.0.dist-info/METADATA").decode()
    assert {
        "agentpass/py.typed",
        "agentpass/__init__.py",
        "agentpass/asgi.py",
        "agentpass/wsgi.py",
    } <= names
    assert "Requires-Python: >=3.9" in metadata
    assert "License: MIT" in metadata
    assert "Requires-Dist" not in metadata, "no runtime dependency"
    with tarfile.open(sdist) as archive:
        members = {member.name for member in archive.getmembers()}
    assert {"agentpass-0.1.0/pyproject.toml", "agentpass-0.1.0/README.md"} <= members
    assert "agentpass-0.1.0/src/agentpass/py.typed" in members


def test_the_install_snippet_installs_it_in_a_fresh_venv(package_copy: Path) -> None:
    checkout = package_copy.parents[1]
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", snippet("python-install")],
        cwd=checkout,
        capture_output=True,
        text=True,
        env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PIP_NO_INDEX": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "0.1.0"
    located = subprocess.run(
        [
            str(checkout / ".venv" / "bin" / "python"),
            "-c",
            "import agentpass.asgi; print(agentpass.__file__)",
        ],
        capture_output=True,
        text=True,
        cwd="/",
    )
    assert located.stdout.startswith(str(checkout / ".venv")), located.stdout + located.stderr
