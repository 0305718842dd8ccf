"""What a type checker makes of the package (issue 56): after ``if result.ok:`` the email is a
``str``; a result's ``code`` is a ``Literal`` of the documented codes, so a misspelt one is an
error under ``mypy --strict`` (Debian's) and pyright's strict mode; every exported symbol's type
is known (``pyright --verifytypes``, 100 %)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from services import NODE, REPO

SOURCE = Path(__file__).resolve().parents[1] / "src"
PYRIGHT = REPO / "node_modules" / "pyright" / "index.js"

# mypy narrows on `if result.ok:`; pyright (which narrows no member's truthiness) on
# `result.ok is True` or `isinstance(result, Verified)`.
NARROWS = '''
from agentpass import AsyncVerifier, Verified, verify

result = verify("apk_x", "aps_y", "http://127.0.0.1:9")
if result.ok {is_true}:
    email: str = result.email
    print(email.lower())
elif result.code == "partner_key_revoked":
    print("rotate the partner key")


async def check(verifier: AsyncVerifier, token: str) -> str | None:
    answer = await verifier.verify(token)
    return answer.email.lower() if isinstance(answer, Verified) else None
'''

MISSPELT = '''
from agentpass import verify

result = verify("apk_x", "aps_y", "http://127.0.0.1:9")
if not result.ok and result.code == "partner_key_revokd":
    print("never")
'''

UNNARROWED = '''
from agentpass import verify

email: str = verify("apk_x", "aps_y", "http://127.0.0.1:9").email
'''


def consumer(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(f"# pyright: strict\n{text}")
    return path


def mypy(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "MYPYPATH": str(SOURCE)},
    )


def pyright(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NODE, str(PYRIGHT), "--pythonpath", sys.executable, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SOURCE)},
    )


@pytest.mark.parametrize("checker", ["mypy", "pyright"])
def test_a_result_narrows_and_a_misspelt_code_is_an_error(checker: str, tmp_path: Path) -> None:
    check = mypy if checker == "mypy" else (lambda path: pyright(str(path)))
    narrowing = NARROWS.replace("{is_true}", "" if checker == "mypy" else "is True")
    narrows = check(consumer(tmp_path, "narrows", narrowing))
    assert narrows.returncode == 0, narrows.stdout + narrows.stderr
    misspelt = check(consumer(tmp_path, "misspelt", MISSPELT))
    assert misspelt.returncode != 0
    assert "partner_key_revokd" in misspelt.stdout, misspelt.stdout
    unnarrowed = check(consumer(tmp_path, "unnarrowed", UNNARROWED))
    assert unnarrowed.returncode != 0, "email may be None until ok is checked"


def test_every_exported_symbol_has_a_known_type() -> None:
    verified = pyright("--verifytypes", "agentpass", "--ignoreexternal")
    assert "Type completeness score: 100%" in verified.stdout, verified.stdout[-3000:]


def test_the_package_passes_mypy_strict() -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "-p", "agentpass"],
        capture_output=True,
        text=True,
        env={**os.environ, "MYPYPATH": str(SOURCE)},
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
