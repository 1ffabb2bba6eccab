"""A Redis Cluster of the test's own: three masters and three replicas of Debian's ``redis-server``
(cluster mode, append-only files, each node in a temporary folder of its own, on ports of its own:
a node's cluster bus is its port + 10000), made with ``redis-cli --cluster create``; a node can be
killed, and the replica that takes its slots found."""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
from pathlib import Path

import redis
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from tests.conftest import require_service
from tests.ports import free_port, is_free

#: How long a master may be silent before its replica is promoted (ms): small, for the tests.
NODE_TIMEOUT_MS = 1000


def cluster_ports(count: int) -> list[int]:
    """``count`` ports of this worker's block (tests/ports.py) whose bus ports (+ 10000, below
    65536 there) are free too."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports and is_free(port + 10000):
            ports.append(port)
    return ports


def require_redis_cluster() -> None:
    """Skip (fail under CI=true) unless Debian's redis-server and redis-cli are installed, and a
    redis-py with asyncio cluster pub/sub (8.0 or newer)."""
    missing = [name for name in ("redis-server", "redis-cli") if shutil.which(name) is None]
    require_service("a Redis Cluster", not missing, f"no {', '.join(missing)} binary; apt-get install redis")
    require_service(
        "redis-py's asyncio cluster pub/sub",
        hasattr(RedisCluster, "pubsub"),
        f"redis-py {redis.__version__} is older than 8.0",
    )


class RedisClusterNodes:
    """Six ``redis-server`` processes in cluster mode, made one cluster (3 masters, 3 replicas)."""

    def __init__(self, folder: Path, *, masters: int = 3) -> None:
        self.folder = folder
        self.ports = cluster_ports(2 * masters)
        self.masters = masters
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        """The URL of one node (any node names the whole cluster)."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def start_node(self, port: int) -> None:
        folder = self.folder / str(port)
        folder.mkdir(parents=True, exist_ok=True)
        options = ["--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--daemonize", "no"]
        options += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
        options += ["--cluster-node-timeout", str(NODE_TIMEOUT_MS)]
        options += ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]
        with (folder / "redis.log").open("ab") as log:  # (the child keeps its own copy)
            self.processes[port] = subprocess.Popen(
                [shutil.which("redis-server") or "redis-server", *options], stdout=log, stderr=subprocess.STDOUT
            )

    async def start(self) -> RedisClusterNodes:
        for port in self.ports:
            self.start_node(port)
        async with asyncio.timeout(15):
            for index in range(len(self.ports)):
                while True:
                    port = self.ports[index]
                    if self.processes[port].poll() is not None:
                        # it exited: its port (or its bus port) was taken between the probe and its
                        # start, by a process of another test; a node on other free ports instead
                        del self.processes[port]
                        self.ports[index] = next(p for p in cluster_ports(len(self.ports) + 1) if p not in self.ports)
                        self.start_node(self.ports[index])
                        continue
                    try:  # (a PING answered: this node, not whatever else listens there)
                        reader, writer = await asyncio.open_connection("127.0.0.1", port)
                        writer.write(b"PING\r\n")
                        answer = await asyncio.wait_for(reader.readline(), 1)
                        writer.close()
                        if answer == b"+PONG\r\n":
                            break
                    except (OSError, TimeoutError):
                        pass
                    await asyncio.sleep(0.05)
        create = ["redis-cli", "--cluster", "create", *(f"127.0.0.1:{port}" for port in self.ports)]
        create += ["--cluster-replicas", "1", "--cluster-yes"]
        made = await asyncio.to_thread(subprocess.run, create, capture_output=True, timeout=60)
        assert made.returncode == 0, made.stdout.decode() + made.stderr.decode()
        await self.wait_ok()
        return self

    async def node(self, port: int, command: str, *args: str | int) -> object:
        client = Redis(host="127.0.0.1", port=port, socket_timeout=2, socket_connect_timeout=2)
        try:
            return await client.execute_command(command, *args)  # type: ignore[no-untyped-call]
        finally:
            await client.aclose()

    async def wait_ok(self, timeout: float = 20.0, *, replicated: bool = True) -> None:
        """Until every live node says ``cluster_state:ok`` (each slot has a master) and, if
        ``replicated``, every master has a replica in sync (the cluster can fail over)."""
        async with asyncio.timeout(timeout):
            while True:
                states = []
                for port in self.live:
                    try:
                        info = await self.node(port, "CLUSTER", "INFO")
                    except OSError:
                        info = b""
                    text = info.decode() if isinstance(info, bytes) else str(info)
                    states.append("cluster_state:ok" in text)
                if all(states) and (not replicated or await self._replicas_online()):
                    return
                await asyncio.sleep(0.1)

    async def _replicas_online(self) -> bool:
        """Whether every master has a replica in sync (state=online)."""
        synced = 0
        for port in self.live:
            info = await self.node(port, "INFO", "replication")
            fields = info if isinstance(info, dict) else {}
            if fields.get("role") == "master" and "online" in str(fields.get("slave0", "")):
                synced += 1
        return synced >= self.masters

    @property
    def live(self) -> list[int]:
        return [port for port, process in self.processes.items() if process.poll() is None]

    async def master_of(self, key: str) -> int:
        """The port of the master that owns ``key``'s slot, as the live nodes see it."""
        port = self.live[0]
        slot = int(await self.node(port, "CLUSTER", "KEYSLOT", key))  # type: ignore[call-overload]
        for start, end, master, *_ in await self.node(port, "CLUSTER", "SLOTS"):  # type: ignore[attr-defined]
            if start <= slot <= end:
                return int(master[1])
        raise AssertionError(f"no master owns slot {slot}")

    async def replicas_of(self, master: int) -> list[int]:
        """The ports of ``master``'s replicas (CLUSTER NODES)."""
        nodes = await self.node(master, "CLUSTER", "NODES")
        text = nodes.decode() if isinstance(nodes, bytes) else str(nodes)
        lines = [line.split() for line in text.splitlines() if line.strip()]
        own = next(fields[0] for fields in lines if "myself" in fields[2])
        return [int(fields[1].split("@")[0].rsplit(":", 1)[1]) for fields in lines if fields[3] == own]

    def kill(self, port: int, sig: int = signal.SIGKILL) -> None:
        process = self.processes[port]
        process.send_signal(sig)
        process.wait(30)

    async def node_id(self, port: int) -> str:
        return str((await self.node(port, "CLUSTER", "MYID")).decode())  # type: ignore[attr-defined]

    async def move_slot_of(self, key: str, to: int) -> None:
        """Move ``key``'s slot, keys and all, to the master on port ``to`` (as a resharding does:
        IMPORTING, MIGRATING, MIGRATE, SETSLOT NODE on every master)."""
        source = await self.master_of(key)
        slot = int(await self.node(source, "CLUSTER", "KEYSLOT", key))  # type: ignore[call-overload]
        source_id, target_id = await self.node_id(source), await self.node_id(to)
        await self.node(to, "CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        await self.node(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        while keys := await self.node(source, "CLUSTER", "GETKEYSINSLOT", slot, 100):
            await self.node(source, "MIGRATE", "127.0.0.1", to, "", 0, 5000, "KEYS", *keys)  # type: ignore[misc]
        for port in self.live:
            if (await self.node(port, "INFO", "replication")).get("role") == "master":  # type: ignore[attr-defined]
                await self.node(port, "CLUSTER", "SETSLOT", slot, "NODE", target_id)

    def pause(self, port: int) -> None:
        """Stop a node (SIGSTOP) without killing it: it neither answers nor replicates."""
        self.processes[port].send_signal(signal.SIGSTOP)

    def resume(self, port: int) -> None:
        self.processes[port].send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Kill every node: what they hold is the test's, and a node asked to shut down (SIGTERM)
        can wait out its shutdown timeout (10 s) for a replica or a master that is gone — a test's
        teardown took 10–30 s that way."""
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
        for process in self.processes.values():
            process.wait(10)
