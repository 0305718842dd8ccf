"""The real identity service and notes API, run as subprocesses of the test session."""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[3]
NODE = os.environ.get("AGENTPASS_NODE") or str(REPO / "node_modules" / ".bin" / "node")
IDENTITY_BIN = "apps/identity/src/bin.ts"
NOTES_BIN = "apps/notes/src/bin.ts"
START_TIMEOUT = 60.0


def node_env(**settings: str) -> dict[str, str]:
    """This process's environment without AgentPass's variables, plus ``settings``."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("AGENTPASS_")}
    return {**env, **settings}


def free_port() -> int:
    """A port nothing listens on now, for a service that must know its own URL before it
    listens (the identity service's PUBLIC_URL, which DPoP proofs name)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_node(args: list[str], env: dict[str, str]) -> str:
    """Runs a repository command (an admin command line) to completion; its stdout."""
    done = subprocess.run(
        [NODE, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout.strip()


@dataclass
class Server:
    """A server started by ``start_server``, with the last lines it printed."""

    name: str
    url: str
    process: subprocess.Popen[str]
    output: deque[str] = field(default_factory=lambda: deque(maxlen=200))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(name: str, args: list[str], env: dict[str, str]) -> Server:
    """Starts a Node server and waits for the first JSON line on its stdout that has a ``url``
    (the services log one when they listen). Its output is read on from then on, so that a
    full pipe never stalls it."""
    process = subprocess.Popen(
        [NODE, *args],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: deque[str] = deque(maxlen=200)
    ready: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_read_lines, args=(process.stdout, output, ready), daemon=True).start()
    try:
        url = ready.get(timeout=START_TIMEOUT)
    except queue.Empty:
        url = None
    if url is None:
        process.kill()
        process.wait()
        raise RuntimeError(f"{name} did not start:\n" + "\n".join(output))
    return Server(name, url, process, output)


def _read_lines(stream: IO[str] | None, output: deque[str], ready: queue.Queue[str | None]) -> None:
    announced = False
    for line in stream or ():
        output.append(line.rstrip("\n"))
        if not announced:
            url = _url_of(line)
            if url is not None:
                announced = True
                ready.put(url)
    if not announced:
        ready.put(None)  # it exited without listening


def _url_of(line: str) -> str | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    url = value.get("url") if isinstance(value, dict) else None
    return url if isinstance(url, str) else None
