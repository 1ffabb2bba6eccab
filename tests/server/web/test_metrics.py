"""``GET /metrics`` after a real race: the Prometheus text parses, and the names and counts are
what happened — players, spectators, rooms by phase, moves, refusals by reason, database writes,
solver jobs, the event loop's lag, garbage collections and the recording backlog."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from prometheus_client.parser import text_string_to_metric_families

from halfmoon import __version__
from halfmoon.compiled import compiled
from halfmoon_server.clock import ManualClock
from halfmoon_server.core.commands import LOG_VERSION
from halfmoon_server.web import keys
from tests.conftest import require_service
from tests.ports import free_port
from tests.server.conftest import StartServer
from tests.server.instances import Instance
from tests.server.support import WsClient, won_record

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(server: TestServer) -> Samples:
    async with aiohttp.ClientSession() as http:
        response = await http.get(server.make_url("/metrics"))
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=")
        text = await response.text()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


async def test_metrics_after_a_race(start_server: StartServer, clock: ManualClock) -> None:
    record = won_record()
    server = await start_server(solver_workers=1)
    async with aiohttp.ClientSession() as http:
        room = (await (await http.post(server.make_url("/api/rooms"), json={"code": str(record.code)})).json())["room"]
    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    spec = await WsClient.connect(server, "spec")
    idle = await WsClient.connect(server, "idle")
    await ada.send("join", room=room, name="Ada")
    await ada.next("welcome")
    await bob.send("join", room=room, name="Bob")
    await bob.next("welcome")
    await spec.send("watch", room=room)
    await spec.next("welcome")

    await ada.send("move", positions=record.moves[0].names())  # type: ignore[union-attr]
    assert (await ada.next("error"))["code"] == "not_started"
    await bob.send("start")
    assert (await bob.next("error"))["code"] == "not_host"

    before = await scrape(server)
    assert value(before, "halfmoon_connections", role="player") == 2
    assert value(before, "halfmoon_connections", role="spectator") == 1
    assert value(before, "halfmoon_connections", role="idle") == 1
    assert value(before, "halfmoon_rooms", mode="race", phase="lobby") == 1
    assert value(before, "halfmoon_rooms", mode="race", phase="running") == 0
    assert value(before, "halfmoon_rooms_by_log_version", version=str(LOG_VERSION)) == 1
    assert value(before, "halfmoon_rooms_by_log_version", version="1") == 0

    await ada.send("start", time_limit_s=600)
    await ada.next("started")
    for step in record.moves[:10]:
        clock.advance(500)
        await ada.send("move", positions=step.names())  # type: ignore[union-attr]
        await ada.next("moved")
    await ada.send("undo")
    assert (await ada.next("moved"))["action"] == "undo"
    running = await scrape(server)
    assert value(running, "halfmoon_rooms", mode="race", phase="running") == 1
    assert value(running, "halfmoon_moves_total", kind="move") == 10
    assert value(running, "halfmoon_moves_total", kind="undo") == 1

    await bob.send("give_up")
    for step in record.moves[9:]:
        clock.advance(500)
        await ada.send("move", positions=step.names())  # type: ignore[union-attr]
        await ada.next("moved")
    await ada.next("race_over", timeout=10)
    await server.app[keys.TASKS].settle()

    after = await scrape(server)
    assert value(after, "halfmoon_moves_total", kind="move") == 10 + len(record.moves) - 9
    assert value(after, "halfmoon_refusals_total", reason="not_started") == 1
    assert value(after, "halfmoon_refusals_total", reason="not_host") == 1
    assert value(after, "halfmoon_rooms", mode="race", phase="finished") == 1
    assert value(after, "halfmoon_db_write_seconds_count", op="save_game") == 2
    assert value(after, "halfmoon_recording_backlog") == 0
    # the solver's only job here is its warm-up at start (no post-game analysis: the seed)
    warm = ("halfmoon_solver_jobs_total", (("job", "warm_up"), ("outcome", "ok")))
    for _ in range(300):
        if warm in after:
            break
        await asyncio.sleep(0.1)
        after = await scrape(server)
    assert value(after, "halfmoon_solver_jobs_total", job="warm_up", outcome="ok") >= 1
    assert value(after, "halfmoon_solver_jobs_in_flight") == 0
    assert value(after, "halfmoon_event_loop_lag_seconds") >= 0
    assert ("process_resident_memory_bytes", ()) in after

    # labels stay few: no room ids, names or addresses anywhere in a sample's labels
    for (_name, labels), _ in after.items():
        for _key, label in labels:
            assert room not in label and "Ada" not in label and "127.0.0.1" not in label

    for client in (ada, bob, spec, idle):
        await client.close()
    await asyncio.sleep(0.05)
    closed = await scrape(server)
    assert value(closed, "halfmoon_connections", role="player") == 0


async def test_rooms_are_counted_by_the_format_their_log_is_written_in(start_server: StartServer) -> None:
    server = await start_server(room_log_version=1)  # (as while an instance of an earlier release runs)
    async with aiohttp.ClientSession() as http:
        assert (await http.post(server.make_url("/api/rooms"), json={})).status == 201
    samples = await scrape(server)
    assert value(samples, "halfmoon_rooms_by_log_version", version="1") == 1
    assert value(samples, "halfmoon_rooms_by_log_version", version=str(LOG_VERSION)) == 0


async def test_the_build_info_says_the_version_and_whether_the_server_runs_compiled(start_server: StartServer) -> None:
    samples = await scrape(await start_server())
    builds = [labels for (name, labels) in samples if name == "halfmoon_build_info"]
    assert builds == [(("compiled", "true" if compiled() else "false"), ("version", __version__))]
    assert value(samples, "halfmoon_build_info", compiled=str(compiled()).lower(), version=__version__) == 1


def test_the_grafana_dashboard_shows_only_metrics_the_server_exports() -> None:
    import json
    import re

    from halfmoon_server.web.metrics import Metrics
    from tests.conftest import ROOT

    dashboard = json.loads((ROOT / "deploy" / "grafana-dashboard.json").read_text())
    exported = {m.name for m in Metrics().registry.collect()} | {
        "halfmoon_connections", "halfmoon_rooms", "halfmoon_recording_backlog"
    }  # fmt: skip
    used = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            used |= set(re.findall(r"\b((?:halfmoon|process)_[a-z_]+)", target["expr"]))
    assert used, "no panel queries anything"
    for name in used:
        base = re.sub(r"_(total|bucket|count|sum|created)$", "", name)
        assert base in exported, f"the dashboard queries {name}, which /metrics does not export"
    titles = " ".join(p["title"] for p in dashboard["panels"]).lower()
    for topic in ("players", "rooms", "moves", "refusals", "lag", "database", "backlog", "solver"):
        assert topic in titles, topic


async def test_every_garbage_collection_is_timed_by_generation(start_server: StartServer) -> None:
    import gc

    server = await start_server()
    before = await scrape(server)
    count = ("halfmoon_gc_pause_seconds_count", (("generation", "2"),))
    gc.collect()  # a full collection: generation 2
    gc.collect(0)
    after = await scrape(server)
    assert after[count] >= before.get(count, 0) + 1
    assert value(after, "halfmoon_gc_pause_seconds_count", generation="0") >= 1
    assert value(after, "halfmoon_gc_pause_seconds_sum", generation="2") > 0


class _Node:
    pass


async def test_the_objects_a_collection_frees_are_counted(start_server: StartServer) -> None:
    """``halfmoon_gc_collected_objects_total``: what the collections found unreachable (reference
    cycles; the server's own paths make none, tests/server/system/test_gc_cycles.py)."""
    import gc

    server = await start_server()
    gc.collect()
    before = (await scrape(server)).get(("halfmoon_gc_collected_objects_total", (("generation", "2"),)), 0.0)
    for _ in range(100):
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
    del a, b
    gc.collect()
    after = value(await scrape(server), "halfmoon_gc_collected_objects_total", generation="2")
    assert after - before >= 200  # 100 cycles of two nodes (and their dicts)


async def test_promtool_finds_nothing_to_say_about_the_metrics(start_server: StartServer) -> None:
    """Prometheus's own linter on what a server that has run a race answers (every family there,
    histograms and labelled counters with samples)."""
    promtool = shutil.which("promtool")
    require_service("promtool", promtool is not None, "apt-get install prometheus (promtool; nothing is started)")
    assert promtool is not None
    server = await start_server(solver_workers=1)
    client = await WsClient.connect(server, "ada")
    await client.send("solo", name="Ada", code=str(won_record().code))
    await client.next("welcome")
    await client.close()
    async with aiohttp.ClientSession() as http:
        text = await (await http.get(server.make_url("/metrics"))).text()
    assert "_bucket{" in text and "halfmoon_rooms" in text  # histograms and gauges with samples
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert (checked.returncode, checked.stdout + checked.stderr) == (0, "")


@pytest.mark.slow
async def test_metrics_are_served_on_their_own_listener_and_not_on_the_application_port(tmp_path: Path) -> None:
    metrics_port = free_port()
    inst = Instance(tmp_path, args=("--metrics-port", str(metrics_port)), env={"HALFMOON_METRICS_ON_APP_PORT": "0"})
    await inst.start()
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{inst.base}/metrics") as public:
                assert public.status == 404, "whoever reaches the game does not reach the metrics"
            async with http.get(f"http://127.0.0.1:{metrics_port}/metrics") as own:
                assert own.status == 200 and "halfmoon_rooms" in await own.text()
    finally:
        inst.stop()
