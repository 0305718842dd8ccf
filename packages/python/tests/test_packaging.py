"""The package builds an sdist and a wheel (Debian's python3-build, no network); the wheel the
identity service serves (npm run pack writes it) holds the same, and installs in a plain venv as
the README's install snippet says. Builds run on a copy of the package, so that the build's
by-products (build/, *.egg-info) never land in the working tree."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import AgentPass
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


def spelled_plainly(requirement: str) -> str:
    """A requirement without the spaces, brackets and quotes that setuptools' versions spell
    differently: ``cryptography (>=3.1) ; extra == 'dpop'`` is ``cryptography>=3.1; extra ==
    "dpop"``."""
    return re.sub(r"[\s()'\"]", "", requirement)


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
    assert "Author: AgentPass" in metadata
    assert "License-File: LICENSE" in metadata
    assert "agentpass-0.1.0.dist-info/LICENSE" in names
    assert {"agentpass/fastapi.py", "agentpass/flask.py"} <= names
    requirements = [
        spelled_plainly(line) for line in metadata.splitlines() if line.startswith("Requires-Dist")
    ]
    # No runtime dependency: cryptography only for DPoP, with the extra (agentpass[dpop]).
    assert requirements == ["Requires-Dist:cryptography>=3.1;extra==dpop"]
    assert "Provides-Extra: dpop" in metadata
    with tarfile.open(sdist) as archive:
        members = {member.name for member in archive.getmembers()}
    assert {
        "agentpass-0.1.0/pyproject.toml",
        "agentpass-0.1.0/README.md",
        "agentpass-0.1.0/LICENSE",
    } <= members
    assert "agentpass-0.1.0/src/agentpass/py.typed" in members


def test_the_install_snippet_installs_the_served_wheel_in_a_plain_venv(
    agentpass: AgentPass, tmp_path: Path
) -> None:
    """The README's lines, as written, against the running identity service: a venv without the
    system's packages, and no index (the wheel has no dependency)."""
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", snippet("python-install")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "PIP_NO_INDEX": "1",
            "AGENTPASS_URL": agentpass.identity_url,
        },
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "0.1.0"
    located = subprocess.run(
        [
            str(tmp_path / ".venv" / "bin" / "python"),
            "-c",
            "import agentpass.asgi; print(agentpass.__file__)",
        ],
        capture_output=True,
        text=True,
        cwd="/",
    )
    assert located.stdout.startswith(str(tmp_path / ".venv")), located.stdout + located.stderr


def test_the_served_wheel_installs_with_the_dpop_extra_where_cryptography_is(
    agentpass: AgentPass, tmp_path: Path
) -> None:
    """``agentpass[dpop]`` from the service's URL asks for cryptography, here the system's (no
    index), and signs proofs with it."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    wheel = f"{agentpass.identity_url}/downloads/agentpass-0.1.0-py3-none-any.whl"
    installed = subprocess.run(
        [str(venv / "bin" / "pip"), "install", f"agentpass[dpop] @ {wheel}"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "does not provide the extra" not in installed.stdout + installed.stderr
    script = (
        "import agentpass\n"
        "tokens = agentpass.SessionTokens('http://127.0.0.1:9', 'apu_key', dpop=True)\n"
        "print(agentpass.__file__)\nprint(len(tokens.dpop_thumbprint))\n"
    )
    signed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True, cwd="/"
    )
    location, thumbprint_length = signed.stdout.split()
    assert location.startswith(str(venv)), signed.stderr
    assert thumbprint_length == "43"  # base64url of a SHA-256


def test_the_served_wheel_holds_what_setuptools_builds(package_copy: Path, tmp_path: Path) -> None:
    """The wheel npm run pack writes with Node (scripts/python-wheel.ts), which the service serves,
    has setuptools' files and metadata fields."""
    served = PACKAGE.parents[1] / "packages-dist" / "agentpass-0.1.0-py3-none-any.whl"
    assert served.exists(), "npm install (or npm run pack) writes it"
    out = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "-o", str(out), package_copy],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout + built.stderr

    def contents(wheel: Path) -> tuple[dict[str, bytes], dict[str, set[str]]]:
        with zipfile.ZipFile(wheel) as archive:
            files = {
                name: archive.read(name)
                for name in archive.namelist()
                if not name.startswith("agentpass-0.1.0.dist-info/")
            }
            headers = archive.read("agentpass-0.1.0.dist-info/METADATA").decode().split("\n\n")[0]
        fields: dict[str, set[str]] = {}
        for line in headers.splitlines():
            name, _, value = line.partition(": ")
            fields.setdefault(name, set()).add(
                spelled_plainly(value) if name == "Requires-Dist" else value
            )
        return files, fields

    served_files, served_fields = contents(served)
    built_files, built_fields = contents(out / served.name)
    assert served_files == built_files
    for field in (
        "Name",
        "Version",
        "Summary",
        "Author",
        "License",
        "License-File",
        "Requires-Python",
        "Classifier",
        "Keywords",
        "Provides-Extra",
        "Requires-Dist",
    ):
        assert served_fields.get(field) == built_fields.get(field), field
