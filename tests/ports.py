"""Ports for the servers a test starts as child processes (``halfmoon serve``, ``redis-server``,
nginx, chromium's debugging port): a port that is free now and that nobody else is about to take.

Such a port is chosen first and bound later, by the child, a second or so on. Asked of the kernel
(a bind to port 0), it would come from the ephemeral range, which every socket on the machine
draws from — and with the suite on several pytest-xdist workers, another worker's servers and
clients bind thousands of those a run, any of which may land on the port in that second. So each
worker takes its ports from a block of its own below the ephemeral range, in turn, each checked
free: no other worker chooses from that block and the kernel gives none of it to a port-0 bind.
"""

from __future__ import annotations

import itertools
import os
import socket

#: The blocks start here, below Linux's default ephemeral range (32768-60999): above the
#: well-known services this machine runs (PostgreSQL, Redis, RabbitMQ's 5672 and 15672, NATS, …);
#: a port one of them holds is skipped as taken. A Redis cluster node's bus port is its port +
#: 10000, which stays below 65536.
FIRST_PORT = 20000
#: Ports in one worker's block.
BLOCK = 3000
#: Blocks below the ephemeral range's start (a fifth worker shares the first block, and so on).
BLOCKS = 4

_turn = itertools.count()


def _worker_index() -> int:
    """This pytest-xdist worker's number (``gw3`` → 3); 0 in a run on one process."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name[2:]) if name[2:].isdigit() else 0


def is_free(port: int) -> bool:
    """Whether a port on 127.0.0.1 can be bound now."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def worker_block() -> range:
    """The ports this worker chooses from."""
    start = FIRST_PORT + (_worker_index() % BLOCKS) * BLOCK
    return range(start, start + BLOCK)


def free_port() -> int:
    """A port on 127.0.0.1 that is free now, from this worker's block, the next in turn (so a
    port just given up is not given again at once)."""
    block = worker_block()
    for _ in range(len(block)):
        port = block[next(_turn) % len(block)]
        if is_free(port):
            return port
    raise RuntimeError(f"no free port in {block.start}-{block.stop - 1}")
