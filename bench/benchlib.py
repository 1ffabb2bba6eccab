"""Helpers the benchmark scripts share: CPU time of a process, a free loopback port."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (steadier than wall time under load)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
