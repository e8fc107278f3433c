"""``zkwire trace`` in a subprocess, between a test's clients and a real server (its own interpreter: its
decoding competes with nothing of the test's)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["TracerProcess", "decoding_processes", "free_port"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def decoding_processes() -> list[int]:
    """This process's children running the tracer's decoding process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b"zkwire.trace.decodeproc" in cmdline:
            found.append(int(entry.name))
    return found


class TracerProcess:
    """``zkwire trace --listen 127.0.0.1:<free port> --server <first server of zk_hosts> *args``, ready
    once its port accepts connections.  :meth:`stop` interrupts it (Ctrl-C) and returns its exit code and
    standard error; what it wrote to a ``stdout=subprocess.PIPE`` is then in :attr:`output`."""

    def __init__(self, zk_hosts: str, *args: str, stdout: Any = subprocess.DEVNULL) -> None:
        self.port = free_port()
        server = zk_hosts.split(",")[0]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "zkwire", "trace", "--listen", f"127.0.0.1:{self.port}", "--server", server, *args],
            stdout=stdout,
            stderr=subprocess.PIPE,
        )
        self.output = b""
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.05)

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> tuple[int, bytes]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            out, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        self.output = out or b""
        return self.proc.returncode, err
