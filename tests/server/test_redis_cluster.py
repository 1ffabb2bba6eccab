"""The tests' Redis Cluster (``tests/server/redis_cluster.py``) starts even when a port it picked
is taken before its node starts (another test's process got there first): that node goes on
other free ports."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.server.redis_cluster import RedisClusterNodes, require_redis_cluster

pytestmark = [pytest.mark.redis, pytest.mark.slow]


async def test_a_node_whose_port_was_taken_meanwhile_starts_on_another(tmp_path: Path) -> None:
    require_redis_cluster()
    nodes = RedisClusterNodes(tmp_path / "cluster")
    taken = nodes.ports[2]
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", taken))  # (as a client's socket would hold it: not listening)
        try:
            await nodes.start()
            assert taken not in nodes.ports and len(set(nodes.ports)) == 6
            assert len(nodes.live) == 6
            assert await nodes.master_of("hm:{X}:log") in nodes.ports
        finally:
            nodes.stop()
