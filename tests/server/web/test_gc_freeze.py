"""The application's garbage-collector settings (``--gc-young``, ``--gc-freeze``): the young
generation's threshold is refused by the settings when ``gc.set_threshold`` cannot take it (not
by a crash at start), two applications in one process (the tests) give the process its
thresholds back whatever order they close in, and cyclic garbage made between two freezes is
collected, not frozen until the full collection 15 minutes later (``gc.freeze()`` every 2 s
resets the young count: at 50,000 no young collection is ever reached)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
import weakref
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from halfmoon_server.clock import ManualClock
from halfmoon_server.errors import SettingsError
from halfmoon_server.settings import Settings
from halfmoon_server.web import keys
from halfmoon_server.web.app import LIGHT_LOAD_SHARE, _freeze_gc, create_app, freeze_interval
from tests.server.support import make_settings


async def test_two_applications_in_one_process_give_the_thresholds_back_in_any_order(tmp_path: Path) -> None:
    """app.py `_freeze_gc` saves the thresholds it found and restores them at its cleanup: the
    first application to close restores the process's thresholds under the one still running,
    and the last one restores the first one's — the process keeps 11,111 after both closed."""
    before = gc.get_threshold()
    one = TestServer(create_app(make_settings(tmp_path / "one", ManualClock(0), gc_young=11_111)))
    two = TestServer(create_app(make_settings(tmp_path / "two", ManualClock(0), gc_young=22_222)))
    await one.start_server()
    try:
        await two.start_server()
        try:
            assert gc.get_threshold()[0] == 22_222
        finally:
            await one.close()  # the first to start closes first
            during = gc.get_threshold()
            await two.close()
    finally:
        after = gc.get_threshold()
        gc.set_threshold(*before)  # whatever happened, the next tests run with the process's own
    assert during[0] == 22_222, f"the running application's threshold was changed under it: {during}"
    assert after == before, f"the process's thresholds were not given back: {after}, not {before}"


def test_a_young_threshold_the_collector_cannot_take_is_refused_by_the_settings() -> None:
    """``gc.set_threshold`` takes a C int: 2**31 passes `Settings.validate` and then fails the
    start with OverflowError out of a cleanup context, not a SettingsError naming the option."""
    with pytest.raises(OverflowError):
        gc.set_threshold(2**31, *gc.get_threshold()[1:])  # what the start would do
    with pytest.raises(SettingsError, match=r"gc_young|HALFMOON_GC_YOUNG"):
        Settings.from_env({"HALFMOON_GC_YOUNG": str(2**31)})


class _Node:
    pass


async def test_cyclic_garbage_made_between_two_freezes_is_collected_not_frozen(tmp_path: Path) -> None:
    """``gc.freeze()`` moves every generation into the permanent one and sets the young count
    to 0. Every ``gc_freeze_s`` (2 s), then, the young count restarts: at ``gc_young`` 50,000 a
    young collection needs 50,000 more tracked objects than freed within 2 s, which a server
    in a steady state never reaches. So every reference cycle that became garbage in those 2 s
    is frozen with the live heap and waits for the full collection (``--gc-collect``, 15
    minutes), where at Python's 700 it was collected within moments. Here: 3,000 two-node
    cycles made and dropped, then a few freezes; a full collection (of what is not frozen)
    must free them."""
    settings = make_settings(tmp_path, ManualClock(0), gc_freeze_s=0.05, gc_collect_s=0.0)
    app: Any = {keys.SETTINGS: settings}  # what _freeze_gc reads of its application
    before = gc.get_threshold()
    context = _freeze_gc(app)
    await context.__anext__()
    try:
        refs = []
        for _ in range(3_000):
            a, b = _Node(), _Node()
            a.other, b.other = b, a  # type: ignore[attr-defined]
            refs.append(weakref.ref(a))
        del a, b
        await asyncio.sleep(0.3)  # several freezes
        gc.collect()  # everything not frozen, every generation
        alive = sum(ref() is not None for ref in refs)
    finally:
        with contextlib.suppress(StopAsyncIteration):
            await context.__anext__()
        gc.unfreeze()
        gc.collect()
        gc.set_threshold(*before)
    assert alive == 0, f"{alive} of 3,000 garbage cycles were frozen with the live heap"


def test_a_process_under_light_load_freezes_more_often_and_a_busy_one_every_gc_freeze() -> None:
    assert freeze_interval(0.6, 2.0, 0.25) == 0.25  # a human's pace at 10,000 players
    assert freeze_interval(LIGHT_LOAD_SHARE, 2.0, 0.25) == 2.0  # saturated: the queue is young
    assert freeze_interval(0.99, 2.0, 0.25) == 2.0
    assert freeze_interval(0.1, 2.0, 0.0) == 2.0  # --gc-freeze-light 0: off
    assert freeze_interval(0.1, 0.2, 0.25) == 0.2  # never less often than --gc-freeze


async def _freezes_over_a_second(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """When (loop time) the application froze its heap while it ran for a second, the start's own
    freeze left out."""
    app: Any = {keys.SETTINGS: settings}
    freezes: list[float] = []
    real_freeze = gc.freeze
    loop = asyncio.get_running_loop()

    def counted() -> None:
        freezes.append(loop.time())
        real_freeze()

    monkeypatch.setattr(gc, "freeze", counted)
    before = gc.get_threshold()
    context = _freeze_gc(app)
    await context.__anext__()
    try:
        await asyncio.sleep(1.0)
    finally:
        with contextlib.suppress(StopAsyncIteration):
            await context.__anext__()
        gc.set_threshold(*before)
    return freezes[1:]


async def test_the_heap_is_frozen_every_light_interval_while_the_process_is_idle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(tmp_path, ManualClock(0), gc_freeze_s=0.4, gc_freeze_light_s=0.05, gc_collect_s=0.0)
    # the test's process idles: the first freeze at 0.4 s, then every 0.05 s
    in_the_loop = await _freezes_over_a_second(settings, monkeypatch)
    assert 8 <= len(in_the_loop) <= 14, in_the_loop
    assert in_the_loop[1] - in_the_loop[0] < 0.2


async def test_a_busy_process_freezes_every_gc_freeze_however_short_the_light_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(tmp_path, ManualClock(0), gc_freeze_s=0.2, gc_freeze_light_s=0.02, gc_collect_s=0.0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    monkeypatch.setattr(time, "process_time", lambda: loop.time() - started)  # a whole core, always
    in_the_loop = await _freezes_over_a_second(settings, monkeypatch)
    assert 3 <= len(in_the_loop) <= 6, in_the_loop  # every 0.2 s, not every 0.02 s
