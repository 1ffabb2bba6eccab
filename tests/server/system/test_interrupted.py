"""A race interrupted by a restart says what it is: it never reads ``finished`` with some of its
results while racers are still playing.

Three racers, one of them done, and the server goes down (killed, or stopped) with the embedded
journal: after the restart ``GET /api/rooms/{id}`` and every resume snapshot say ``running``,
with no results, and the race carries on to a ``race_over`` that has all three. If the time
limit ran out while the server was down, the race is over with every racer in its results
(those still playing ``timed_out``). A room whose log this server cannot read does not keep the
server from starting, and answers ``unavailable`` — not ``finished`` with the games stored so far.
"""

from __future__ import annotations

import json
import logging
import signal
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from halfmoon_server.clock import ManualClock
from tests.server.conftest import StartServer
from tests.server.instances import Instance
from tests.server.support import WsClient
from tests.server.system.test_durability import CODE, LINE, play, resume

pytestmark = pytest.mark.slow  # real servers killed and restarted

NAMES = ("Ada", "Bob", "Cy")


async def three_racers(ws_url: str, base: str) -> tuple[str, dict[str, WsClient], dict[str, str]]:
    """A room on :data:`CODE` with Ada (the host), Bob and Cy, started: the room, the clients and
    their tokens."""
    async with aiohttp.ClientSession() as http:
        room = (await (await http.post(f"{base}/api/rooms", json={"code": CODE})).json())["room"]
    clients: dict[str, WsClient] = {}
    tokens: dict[str, str] = {}
    for name in NAMES:
        client = clients[name] = await WsClient.connect_url(ws_url, name)
        await client.send("join", room=room, name=name)
        tokens[name] = (await client.next("welcome"))["token"]
    await clients["Ada"].send("start", time_limit_s=60)
    for client in clients.values():
        await client.next("started")
    return room, clients, tokens


async def read_room(base: str, room: str) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as http:
        answer = await http.get(f"{base}/api/rooms/{room}")
        return answer.status, await answer.json()


def statuses(snapshot: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["status"] for p in snapshot["players"]}


async def close_all(*clients: WsClient) -> None:
    for client in clients:
        if client.closed:
            await client.session.close()
        else:
            await client.close()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "stopped"])
async def test_a_race_interrupted_by_a_restart_carries_on_and_never_reads_finished(tmp_path: Path, sig: int) -> None:
    inst = await Instance(tmp_path / "data").start()
    try:
        room, clients, tokens = await three_racers(inst.ws, inst.base)
        await play(clients["Ada"], LINE, 1)
        ada_over = await clients["Ada"].next("game_over")
        assert ada_over["outcome"] == "won"
        bob_acks = await play(clients["Bob"], LINE[:3], 1)

        inst.kill(sig)
        await inst.start()

        status, after = await read_room(inst.base, room)
        assert status == 200
        assert after["phase"] == "running" and after["results"] is None, "not finished with partial results"
        assert statuses(after) == {"Ada": "won", "Bob": "playing", "Cy": "playing"}
        bob = await resume(inst, "bob2", room, tokens["Bob"], None)
        snapshot = (await bob.next("welcome"))["room"]
        assert snapshot["phase"] == "running" and snapshot["results"] is None and snapshot.get("game_over") is None
        assert statuses(snapshot) == {"Ada": "won", "Bob": "playing", "Cy": "playing"}
        me = next(p for p in snapshot["players"] if p["name"] == "Bob")
        assert (me["moves"], me["score"]) == (3, bob_acks[-1]["score"]), "Bob is where he was"
        ada = await resume(inst, "ada2", room, tokens["Ada"], None)
        ada_snapshot = (await ada.next("welcome"))["room"]
        assert ada_snapshot["phase"] == "running" and ada_snapshot["game_over"]["outcome"] == "won"
        cy = await resume(inst, "cy2", room, tokens["Cy"], None)
        assert (await cy.next("welcome"))["room"]["phase"] == "running"

        # the race goes on where it was, and ends with everyone in it
        await play(bob, LINE[3:5], 4)
        await bob.send("give_up")
        await cy.send("give_up")
        race_over = await ada.next("race_over", timeout=10)
        assert [(r["name"], r["outcome"]) for r in race_over["results"]] == [
            ("Ada", "won"),
            ("Bob", "gave_up"),
            ("Cy", "gave_up"),
        ]
        status, over = await read_room(inst.base, room)
        assert over["phase"] == "finished" and len(over["results"]) == 3
        await close_all(*clients.values(), bob, ada, cy)
    finally:
        inst.stop()


async def test_a_race_whose_time_ran_out_while_the_server_was_down_ends_with_every_racer(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server()
    base = str(server.make_url("")).rstrip("/")
    room, clients, tokens = await three_racers(str(server.make_url("/ws")), base)
    await play(clients["Ada"], LINE, 1)
    await clients["Ada"].next("game_over")
    await play(clients["Bob"], LINE[:3], 1)
    await server.close()  # a stop: everyone is told to connect again (1012), and away
    clock.advance(61_000)  # the 60 s time limit passes before the server is back

    server = await start_server()
    base = str(server.make_url("")).rstrip("/")
    bob = await WsClient.connect(server, "bob2")
    await bob.send("resume", room=room, token=tokens["Bob"])
    welcome = await bob.next("welcome")
    if welcome["room"]["results"] is None:  # the overdue deadline is settled as the room comes back
        await bob.next("race_over")
    status, after = await read_room(base, room)
    assert status == 200 and after["phase"] == "finished"
    assert sorted((r["name"], r["outcome"]) for r in after["results"]) == [
        ("Ada", "won"),
        ("Bob", "timed_out"),
        ("Cy", "timed_out"),
    ], "every racer is in the results: nobody is dropped for being away"
    await close_all(*clients.values(), bob)


async def test_a_room_that_cannot_be_rebuilt_is_unavailable_not_finished_and_the_others_go_on(
    start_server: StartServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start_server()
    base = str(server.make_url("")).rstrip("/")
    broken, clients, _ = await three_racers(str(server.make_url("/ws")), base)
    await play(clients["Ada"], LINE, 1)
    await clients["Ada"].next("game_over")  # one game of the room is stored
    kept = await WsClient.connect(server, "solo")
    await kept.send("solo", name="Dee", code=CODE)
    welcome = await kept.next("welcome")
    await play(kept, LINE[:2], 1)
    await server.close()
    journal = sqlite3.connect(tmp_path / "data" / "journal.db")
    with journal:  # a header this version cannot read (as a newer server's would be)
        (raw,) = journal.execute("SELECT header FROM rooms WHERE id = ?", (broken,)).fetchone()
        header = json.loads(raw)
        header["config"]["a_setting_from_the_future"] = 1
        damaged = header["code"] = f"{CODE[:-1]}!"  # (and a code it cannot parse: its error quotes it)
        journal.execute("UPDATE rooms SET header = ? WHERE id = ?", (json.dumps(header), broken))
    journal.close()
    caplog.set_level(logging.INFO)

    server = await start_server()  # starts: one damaged room does not keep the others down
    base = str(server.make_url("")).rstrip("/")
    status, answer = await read_room(base, broken)
    assert status == 503 and answer["error"]["code"] == "unavailable", answer
    assert "cannot be rebuilt" in answer["error"]["message"]
    said = [r.getMessage() for r in caplog.records]
    assert any("cannot be rebuilt from its log" in line for line in said)
    assert not [line for line in said if damaged[:12] in line], "no log line carries a deal code"
    again = await WsClient.connect(server, "solo2")
    await again.send("resume", room=welcome["room"]["room"], token=welcome["token"])
    snapshot = (await again.next("welcome"))["room"]
    assert snapshot["phase"] == "running" and snapshot["players"][0]["moves"] == 2
    await close_all(*clients.values(), kept, again)
