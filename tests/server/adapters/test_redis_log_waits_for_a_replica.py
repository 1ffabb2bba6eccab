"""One Redis node with a replica (``replicaof``), ``--redis-replicas 1``: an append is
acknowledged, applied and published only once the replica has it; one the replica cannot confirm
in time is refused as uncertain and shown nowhere, and the next confirmed one brings it."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from halfmoon_server.adapters.redis_log import RedisLog
from halfmoon_server.errors import LogUnavailable
from tests.conftest import require_service
from tests.server.adapters.test_redis_log_on_a_redis_cluster import Copy
from tests.server.instances import RedisServer

pytestmark = [pytest.mark.redis]


@pytest.fixture
async def master_and_replica(tmp_path: Path) -> AsyncIterator[tuple[RedisServer, RedisServer]]:
    require_service("redis-server", RedisServer.binary() is not None, "no redis-server binary; apt-get install redis")
    master = await RedisServer(tmp_path / "master").start()
    replica = await RedisServer(tmp_path / "replica").start()
    client = Redis(port=replica.port)
    try:
        await client.execute_command("REPLICAOF", "127.0.0.1", master.port)  # type: ignore[no-untyped-call]
        async with asyncio.timeout(10):
            while (await client.info("replication")).get("master_link_status") != "up":
                await asyncio.sleep(0.05)
    finally:
        await client.aclose()
    yield master, replica
    if replica.process is not None:
        replica.process.send_signal(signal.SIGCONT)
    replica.kill()
    master.kill()


async def test_an_append_is_acknowledged_once_the_replica_has_it_and_refused_as_uncertain_when_it_cannot(
    master_and_replica: tuple[RedisServer, RedisServer],
) -> None:
    master, replica = master_and_replica
    # a second's wait: a refusal below costs that long, and a confirmation (a millisecond on an idle
    # machine) has room while the other core's tests are busy
    one = RedisLog(master.url, replicas=1, wait_ms=1000)
    two = RedisLog(master.url, replicas=1, wait_ms=1000)
    await one.open()
    await two.open()
    try:
        assert not one.cluster
        assert await one.create({"room": "S1"})
        here = Copy("S1", one)
        one.follow(here)
        assert await one.append("S1", {"k": "x", "n": 0}) == 1

        assert replica.process is not None
        replica.process.send_signal(signal.SIGSTOP)
        try:
            ballast = Redis(port=master.port)  # a stopped process's sockets still take data: fill them
            await ballast.set("ballast", "x" * 32_000_000)
            await ballast.aclose()
            with pytest.raises(LogUnavailable, match="0 of 1 Redis replicas confirmed it within 1000 ms") as refused:
                await one.append("S1", {"k": "x", "n": 1})
            assert not refused.value.certain
            await asyncio.sleep(0.3)
            assert [e["n"] for e in here.entries] == [0], "not applied"
            with pytest.raises(LogUnavailable, match="0 of 1"):
                await two.load("S1")  # a read that would show it waits for the replica too
        finally:
            replica.process.send_signal(signal.SIGCONT)
        caught_up = Redis(port=master.port)  # the replica takes the ballast first
        assert await caught_up.execute_command("WAIT", 1, 10_000) == 1
        await caught_up.aclose()
        assert await one.append("S1", {"k": "x", "n": 2}) == 3, "a later confirmed append covers it"
        assert [e["n"] for e in here.entries] == [0, 1, 2]
    finally:
        await one.close()
        await two.close()


async def test_an_append_applied_through_its_batchs_confirmed_reload_is_acknowledged_not_refused_as_uncertain(
    master_and_replica: tuple[RedisServer, RedisServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch's appends to one room where the first ran and the second met NOSCRIPT (a
    ``SCRIPT FLUSH`` from another client landed between them), the batch's ``WAIT`` timing out:
    the second, sent again once the script is reloaded, is confirmed by its own ``WAIT`` and its
    answer delivers both entries — so the first, applied by then, is acknowledged with its number,
    not refused as maybe lost while its room shows it."""
    master, replica = master_and_replica
    assert replica.process is not None
    one = RedisLog(master.url, replicas=1, wait_ms=1000)  # (a second: as above)
    await one.open()
    admin = Redis(port=master.port)
    try:
        assert await one.create({"room": "S2"})
        here = Copy("S2", one)
        one.follow(here)
        assert await one.append("S2", {"k": "x", "n": 0}) == 1  # (the script loaded)

        real_pipeline, real_load = one.redis.pipeline, one.redis.script_load
        armed = [True]

        def flushed_midway(*args: Any, **kwargs: Any) -> Any:
            pipe = real_pipeline(*args, **kwargs)
            if not armed:
                return pipe
            armed.clear()
            real_evalsha, real_execute = pipe.evalsha, pipe.execute

            def evalsha(*call: Any) -> Any:
                queued = real_evalsha(*call)
                if len(pipe.command_stack) == 1:
                    pipe.script_flush()  # another client's flush, between the batch's two appends
                return queued

            async def execute(**options: Any) -> list[Any]:
                answers: list[Any] = await real_execute(**options)
                del answers[1]  # (the flush's answer: not the log's)
                return answers

            pipe.evalsha, pipe.execute = evalsha, execute
            return pipe

        async def load_once_caught_up(script: Any) -> Any:
            replica.process.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
            async with asyncio.timeout(20):
                while True:
                    info = await admin.info("replication")
                    if info.get("slave0", {}).get("offset") == info["master_repl_offset"]:
                        break
                    await asyncio.sleep(0.05)
            return await real_load(script)

        monkeypatch.setattr(one.redis, "pipeline", flushed_midway)
        monkeypatch.setattr(one.redis, "script_load", load_once_caught_up)
        replica.process.send_signal(signal.SIGSTOP)
        await admin.set("ballast", "x" * 32_000_000)  # a stopped process's sockets still take data
        first, second = await asyncio.gather(
            one.append("S2", {"k": "x", "n": 1}), one.append("S2", {"k": "x", "n": 2}), return_exceptions=True
        )
        assert not armed, "the flush landed between the two appends"
        assert [e["n"] for e in here.entries] == [0, 1, 2], "both applied, confirmed by the reload's WAIT"
        assert second == 3
        assert first == 2, f"applied, yet answered {first!r}"
    finally:
        replica.process.send_signal(signal.SIGCONT)
        await admin.aclose()
        await one.close()
