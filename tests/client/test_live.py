"""The client against a real server (``create_app`` on 127.0.0.1, temporary SQLite): a
terminal racer driven by the test, bots and a spectator race to the results; reconnection
with backoff; the ``halfmoon`` commands' one-line errors. Every wait is bounded."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import os
import random
import re
import sys
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

from halfmoon.game import Game
from halfmoon.view import BoardView
from halfmoon_client.bots import BotReport, run_bots
from halfmoon_client.connection import Backoff
from halfmoon_client.errors import ClientError, RefusedError, UnreachableError
from halfmoon_client.rest import create_room
from halfmoon_client.screens import CLEAR, results_screen, results_table
from halfmoon_client.strategy import choose_greedy, legal_moves
from halfmoon_client.terminal import AnsiScreen, play_race, watch_room
from halfmoon_server import create_app
from halfmoon_server.settings import Settings
from tests.client.conftest import Proxy
from tests.client.support import RecordingScreen, board_from_screen
from tests.conftest import ROOT
from tests.ports import free_port

FAST = Backoff(first=0.05, factor=2, cap=0.4, jitter=0.1, attempts=30)
RANKS = {"A": 1, "J": 11, "Q": 12, "K": 13}
#: a deal greedy bots play for long: 48 moves (won) with most random sources, at least 45 with
#: every one of 6,000 the review tried, so a race on it outlasts the test's network cut by seconds.
#: Found by trying ``random_code(random.Random(i))`` for i < 40; a random deal may leave a greedy
#: bot stuck after three moves, and its race over in a blink.
LONG_DEAL = "HM1-N-OZMIRIP"


def rank(symbol: str) -> int:
    text = symbol[:-1]
    return RANKS.get(text) or int(text)


def a_legal_move(board: dict[str, str | None]) -> str | None:
    """A move read off the screen: a pair summing to 11, or J+Q+K."""
    cards = [(pos, rank(sym)) for pos, sym in board.items() if sym is not None]
    for i, (p, a) in enumerate(cards):
        for q, b in cards[i + 1 :]:
            if a <= 10 and b <= 10 and a + b == 11:
                return f"{p} {q}"
    faces = {r: p for p, r in cards if r > 10}
    return " ".join(faces[r] for r in (11, 12, 13)) if len(faces) == 3 else None


def a_bad_move(board: dict[str, str | None]) -> str:
    cards = [(pos, rank(sym)) for pos, sym in board.items() if sym is not None and rank(sym) <= 10]
    for i, (p, a) in enumerate(cards):
        for q, b in cards[i + 1 :]:
            if a + b != 11:
                return f"{p} {q}"
    raise AssertionError("no bad pair on the board")


def greedy_moves(code: str, seed: int) -> int:
    """How many moves a greedy bot (random source ``seed``) makes on ``code`` before it is stuck."""
    game, rng, made = Game.from_code(code), random.Random(seed), 0
    while moves := legal_moves(BoardView.of(game), game.code):
        game.push(choose_greedy(BoardView.of(game), moves, rng))
        made += 1
    return made


def spectator_saw_moves(frame: str, at_least: int = 3) -> bool:
    """The spectator's screen shows the race on, with someone ``at_least`` moves in."""
    if frame.startswith("Results"):
        return False
    return any(int(n) >= at_least for n in re.findall(r"(\d+) mv ", frame))


async def until(predicate: object, timeout: float = 20.0) -> None:
    assert callable(predicate)
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)


async def start_and_play_a_move(
    server_url: str,
    room: str,
    lines: asyncio.Queue[str | None],
    screen: RecordingScreen,
    *,
    think_ms: int,
    seed: int,
) -> tuple[asyncio.Task[list[BotReport]], dict[str, str | None]]:
    """The racer waits in the lobby as host: a bot joins, the racer starts the race and plays
    one legal move read off its screen. Returns the bot's task and the board after the move."""
    bots = asyncio.create_task(run_bots(server_url, players=1, room=room, think_ms=think_ms, seed=seed))
    await until(lambda: "bot-" in screen.last)
    lines.put_nowait("s")
    await until(lambda: screen.last.startswith("Time "))
    move = a_legal_move(board_from_screen(screen.last))
    assert move is not None
    lines.put_nowait(move)
    await until(lambda: "Moves 1  ·" in screen.last)
    return bots, board_from_screen(screen.last)


async def test_a_terminal_racer_two_bots_and_a_spectator_race_to_the_results(server_url: str) -> None:
    created = await create_room(server_url)
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    screen = RecordingScreen()
    racer_task = asyncio.create_task(play_race(server_url, created.room, "Ada", lines, screen, tick_s=0.1))
    await until(lambda: "You are the host" in screen.last)
    watcher_screen = RecordingScreen()
    watcher = asyncio.create_task(watch_room(server_url, created.room, watcher_screen, tick_s=0.1, page_s=0.3))
    bots = asyncio.create_task(run_bots(server_url, players=2, room=created.room, think_ms=20, seed=1))
    await until(lambda: sum(line.startswith("    bot-") for line in screen.last.split("\n")) == 2)  # the list
    assert "★ Ada ←" in screen.last

    lines.put_nowait("s")
    await until(lambda: screen.last.startswith("Time "))
    assert "Rivals · " + created.room in screen.last

    board = board_from_screen(screen.last)
    assert len(board) == 20 and all(board[p] is not None for p in board)  # every top visible at the start

    lines.put_nowait(a_bad_move(board))  # «Errori di mossa» off: just ✗
    await until(lambda: "✗ " in screen.last)
    lines.put_nowait("e")
    lines.put_nowait(a_bad_move(board))
    await until(lambda: "The sum must equal 11" in screen.last or "Jack, a Queen and a King" in screen.last)

    move = a_legal_move(board)
    assert move is not None
    lines.put_nowait(move)
    await until(lambda: "Score 10  ·  Moves 1" in screen.last or "Score 15  ·  Moves 1" in screen.last)
    assert board_from_screen(screen.last) != board  # the board redrew from `changes`
    lines.put_nowait("u")
    await until(lambda: "Score 0  ·  Moves 0" in screen.last)
    assert board_from_screen(screen.last) == board

    # the spectator sees all three boards, live
    await until(
        lambda: all(name in watcher_screen.last for name in ("Ada", "bot-")) and " piles " in watcher_screen.last
    )

    lines.put_nowait("g")
    reports = await asyncio.wait_for(bots, 60)
    racer = await asyncio.wait_for(racer_task, 20)
    session = await asyncio.wait_for(watcher, 20)

    assert racer.session.race_over and session.race_over
    # every racer has a say in the sealed deal, the bots too: a racer without a contribution is a
    # slot where a server could put one of its own, chosen after seeing the others'
    assert len(racer.session.contributions or []) == 3 and racer.session.verified is True
    assert screen.last.startswith(f"Results — room {created.room}")
    assert "Ada" in screen.last and "gave up" in screen.last
    assert watcher_screen.last.startswith(f"Results — room {created.room}")
    names = {entry["name"] for entry in racer.session.results or []}
    assert names == {"Ada", *(r.name for r in [r.session.me for r in reports] if r is not None)}
    for report in reports:
        me = report.session.me
        assert me is not None and me.status in ("won", "gave_up") and me.moves > 0


async def test_the_racer_reconnects_with_backoff_and_resumes_where_it_was(server_url: str, proxy: Proxy) -> None:
    created = await create_room(server_url)
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    screen = RecordingScreen()
    racer_task = asyncio.create_task(play_race(proxy.url, created.room, "Ada", lines, screen, tick_s=0.1, backoff=FAST))
    await until(lambda: "You are the host" in screen.last)
    bots, board_before = await start_and_play_a_move(server_url, created.room, lines, screen, think_ms=150, seed=2)

    proxy.cut()  # the network drops, and stays down for a while
    await until(lambda: any("Connection lost: retrying in" in frame for frame in screen.frames))
    await asyncio.sleep(0.5)
    assert sum("Connection lost" in frame for frame in screen.frames) >= 2  # several attempts, backing off
    proxy.restore()
    await until(lambda: "Reconnected." in screen.last)

    assert board_from_screen(screen.last) == board_before and "Moves 1  ·" in screen.last  # same game
    move = a_legal_move(board_from_screen(screen.last))
    assert move is not None
    lines.put_nowait(move)
    await until(lambda: "Moves 2  ·" in screen.last)  # the server took a move on the new connection
    lines.put_nowait("g")
    (bot,) = await asyncio.wait_for(bots, 60)
    racer = await asyncio.wait_for(racer_task, 20)
    # the join and the resume after the cut both named the room in the URL (a balancer routes on it)
    racer_requests = [line for line in proxy.requests if line.startswith("GET /ws")]
    assert len(racer_requests) >= 2 and set(racer_requests) == {f"GET /ws?room={created.room} HTTP/1.1"}
    assert racer.session.race_over and racer.session.players[racer.session.you or ""].moves == 2
    # what the bot did while the racer was away reached the racer with the catch-up
    bot_me = bot.session.me
    assert bot_me is not None and racer.session.players[bot_me.id].moves == bot_me.moves


async def test_bots_and_a_spectator_reconnect_and_see_the_race_to_its_end(server_url: str, proxy: Proxy) -> None:
    """The network drops in the middle of a race: the bots and the spectator each see it, back
    off, reconnect and follow the race to its results. The deal is one greedy bots play for a
    long while (see :data:`LONG_DEAL`), so the race is surely still on when the cut comes; and
    the cut comes once the spectator has seen moves made, not after a guessed delay. Every
    connection, reconnections too, names the room in its URL (``/ws?room=``)."""
    assert min(greedy_moves(LONG_DEAL, seed) for seed in range(20)) >= 40  # ≥ 4 s at 100 ms a move
    created = await create_room(server_url, LONG_DEAL)
    bots = asyncio.create_task(run_bots(proxy.url, players=2, room=created.room, think_ms=100, seed=4, backoff=FAST))
    watcher_screen = RecordingScreen()
    watcher = asyncio.create_task(watch_room(proxy.url, created.room, watcher_screen, tick_s=0.1, backoff=FAST))
    await until(lambda: spectator_saw_moves(watcher_screen.last))  # started, a few moves made, not over
    assert not bots.done() and not watcher.done()
    proxy.cut()
    await until(lambda: any("Connection lost" in frame for frame in watcher_screen.frames))
    proxy.restore()
    reports = await asyncio.wait_for(bots, 60)
    spectator = await asyncio.wait_for(watcher, 20)
    assert spectator.race_over and watcher_screen.last.startswith(f"Results — room {created.room}")
    assert all(report.reconnects >= 1 for report in reports)
    # every connection, the first ones and the reconnections, named the room in its URL
    assert len(proxy.requests) >= 6
    assert set(proxy.requests) == {f"GET /ws?room={created.room} HTTP/1.1"}
    for report in reports:
        session = report.session
        assert session.race_over and session.results is not None
        mine = next(entry for entry in session.results if entry["name"] == report.name)
        assert mine["moves"] > 0 and mine["outcome"] in ("won", "gave_up")


async def test_reconnection_gives_up_after_the_last_attempt(server_url: str, proxy: Proxy) -> None:
    created = await create_room(server_url)
    screen = RecordingScreen()
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    few = Backoff(first=0.02, factor=2, cap=0.05, jitter=0, attempts=3)
    task = asyncio.create_task(play_race(proxy.url, created.room, "Ada", lines, screen, backoff=few))
    await until(lambda: "You are the host" in screen.last)
    proxy.cut()
    with pytest.raises(UnreachableError, match="could not reconnect \\(3 attempts"):
        await asyncio.wait_for(task, 10)


async def test_a_taken_name_is_refused_with_the_servers_words(server_url: str) -> None:
    created = await create_room(server_url)
    screen = RecordingScreen()
    ada = asyncio.create_task(play_race(server_url, created.room, "Ada", asyncio.Queue(), screen))
    await until(lambda: "You are the host" in screen.last)
    with pytest.raises(RefusedError, match="already used") as refused:
        await asyncio.wait_for(play_race(server_url, created.room, "ada", asyncio.Queue(), RecordingScreen()), 10)
    assert refused.value.code == "name_taken"
    ada.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await ada


async def test_a_bad_room_id_is_refused_in_one_clear_error(server_url: str) -> None:
    with pytest.raises(RefusedError, match="no room ZZZZZZ on this server"):
        await asyncio.wait_for(play_race(server_url, "ZZZZZZ", "Ada", asyncio.Queue(), RecordingScreen()), 10)
    with pytest.raises(RefusedError, match="no room ZZZZZZ"):
        await asyncio.wait_for(watch_room(server_url, "ZZZZZZ", RecordingScreen()), 10)


async def halfmoon(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "halfmoon", *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        cwd=ROOT, env={**os.environ, "LANG": "C"},
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        if process.returncode is None:  # timed out: leave no command running behind the test
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("command", ["join", "watch"])
async def test_commands_say_one_line_and_exit_1_when_the_server_is_unreachable(command: str) -> None:
    extra = ["--name", "Ada"] if command == "join" else []
    status, out, err = await halfmoon(command, "K7WQ2M", *extra, "--server", f"http://127.0.0.1:{free_port()}")
    assert status == 1 and out == ""
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert err.startswith(f"halfmoon {command}: cannot reach the server at http://127.0.0.1:")
    assert "connection refused" in err


async def test_commands_say_one_line_and_exit_1_for_a_bad_room(server_url: str) -> None:
    status, out, err = await halfmoon("join", "ZZZZZZ", "--name", "Ada", "--server", server_url)
    assert (status, out, err) == (1, "", "halfmoon join: no room ZZZZZZ on this server\n")
    status, out, err = await halfmoon("watch", "Z1", "--server", server_url)
    assert status == 1 and out == "" and err.startswith("halfmoon watch: not a room id: 'Z1'") and err.count("\n") == 1
    status, _out, err = await halfmoon("bot", "--server", server_url, "--room", "ZZZZZZ", "--players", "2")
    assert status == 1 and "no room" in err and err.count("\n") == 1 and "Traceback" not in err


async def test_when_one_bot_is_refused_the_run_stops_every_bot_and_retrieves_every_error(server_url: str) -> None:
    def the_runs_tasks() -> list[asyncio.Task[object]]:
        return [t for t in asyncio.all_tasks() if t.get_coro().__qualname__.startswith("run_bot")]  # type: ignore[union-attr]

    created = await create_room(server_url)
    unretrieved: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
    try:
        with pytest.raises(ClientError, match="already has 8 players") as refused:  # eight bots in, the ninth refused
            await run_bots(server_url, players=9, room=created.room, think_ms=20, seed=5)
        left_running = the_runs_tasks()
        for task in left_running:  # as asyncio.run does to what is left when the command ends
            task.cancel()
        if left_running:
            await asyncio.wait(left_running)  # (not gather: that would retrieve their errors itself)
        del refused  # its traceback holds the run's frames, and through them its tasks
        gc.collect()  # an exception nobody retrieved is reported when its task is collected
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert left_running == [] and unretrieved == []


async def test_bots_cancelled_while_still_connecting_leave_nothing_running() -> None:
    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # accepts the connection, reads the handshake, never answers it

    silent = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    try:
        run = asyncio.create_task(run_bots(f"http://127.0.0.1:{port}", players=3, room="ABCDEF", think_ms=20))
        await asyncio.sleep(0.3)
        assert not run.done()
        run.cancel()  # Ctrl-C, or asyncio.run ending
        with contextlib.suppress(asyncio.CancelledError):
            await run
        await asyncio.sleep(0)
        assert [t for t in asyncio.all_tasks() if t.get_coro().__qualname__.startswith("run_bot")] == []  # type: ignore[union-attr]
    finally:
        silent.close()


async def test_race_creates_a_room_and_bots_race_in_it_to_the_results(server_url: str) -> None:
    status, out, err = await halfmoon("race", "--server", server_url, "--code", "HM1-N-AAAAAAB")
    assert status == 0, err
    room = out.split("\n")[0].removeprefix("room ")
    assert f"link {server_url}" in out and room in out.split("\n")[1] and "code HM1-N-AAAAAAB" in out
    status, out, err = await halfmoon("race", "--server", server_url, "--code", "HM1-X")
    assert status == 1 and err.startswith("halfmoon race: ") and err.count("\n") == 1

    status, out, err = await halfmoon(
        "bot", "--server", server_url, "--create", "--players", "3", "--think", "0", "--strategy", "random"
    )
    assert status == 0, err
    lines = out.strip().split("\n")
    room_line = lines.pop(0)  # the room is announced before the race, so that it can be watched
    assert room_line.startswith("room ") and room_line.endswith(f"3 bots · {server_url}/r/{room_line[5:11]}")
    assert lines[0].startswith(f"Results — room {room_line[5:11]}") and lines[1].split() == [
        "#",
        "Player",
        "Outcome",
        "Score",
        "Moves",
        "Time",
        "12",
        "24",
        "36",
        "48",
    ]  # the race's splits: the time at moves 12, 24, 36 and 48
    assert len(lines) == 5 and all(line.split()[0] in "123" for line in lines[2:])


async def test_bots_in_a_room_nobody_hosts_start_once_they_are_all_in(server_url: str) -> None:
    """``halfmoon bot --room R --players 3`` on a room made with POST /api/rooms: the first bot
    to join is the host, and it starts the race once its two team-mates have joined."""
    created = await create_room(server_url)
    status, out, err = await halfmoon(
        "bot", "--server", server_url, "--room", created.room, "--players", "3", "--think", "0"
    )
    assert status == 0, err
    lines = out.strip().split("\n")
    assert lines[0].startswith(f"Results — room {created.room}") and len(lines) == 5
    assert all(line.split()[1].startswith("bot-") for line in lines[2:])


async def test_after_a_server_restart_the_racer_reconnects_and_plays_on_in_the_same_race(tmp_path: Path) -> None:
    """The server stops (close 1012: connect again) and comes back on the same port and data
    directory: it rebuilds the room from its journal, the racer reconnects with its token and
    carries on — the same game, the same moves — to the end of the race."""
    port = free_port()
    settings = Settings(data_dir=tmp_path, secret=b"restart", countdown_s=0.1, solver_workers=0)
    first = TestServer(create_app(settings), host="127.0.0.1", port=port)
    await first.start_server()
    url = f"http://127.0.0.1:{port}"
    created = await create_room(url)
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    screen = RecordingScreen()
    task = asyncio.create_task(play_race(url, created.room, "Ada", lines, screen, backoff=FAST))
    await until(lambda: "You are the host" in screen.last)
    lines.put_nowait("s")
    await until(lambda: screen.last.startswith("Time "))
    move = a_legal_move(board_from_screen(screen.last))
    assert move is not None
    lines.put_nowait(move)
    await until(lambda: "Moves 1  ·" in screen.last)
    board_before = board_from_screen(screen.last)
    await first.close()
    await until(lambda: "Connection lost" in screen.last)
    second = TestServer(create_app(settings), host="127.0.0.1", port=port)
    await second.start_server()
    try:
        await until(lambda: "Reconnected." in screen.last, timeout=20)
        assert board_from_screen(screen.last) == board_before and "Moves 1  ·" in screen.last
        lines.put_nowait("g")
        racer = await asyncio.wait_for(task, 20)
        assert racer.session.race_over and racer.session.players[racer.session.you or ""].moves == 1
    finally:
        await second.close()


def test_the_ansi_screen_redraws_only_changed_lines_between_full_redraws() -> None:
    out = io.StringIO()
    screen = AnsiScreen(out)
    screen.draw("Time 0:01\nboard\nhelp")
    assert out.getvalue() == CLEAR + "Time 0:01\nboard\nhelp\n> "
    out.seek(0)
    out.truncate()
    screen.draw("Time 0:02\nboard\nhelp")  # the clock ticked: only line 1, cursor saved and restored
    assert out.getvalue() == "\x1b7\x1b[1;1H\x1b[2KTime 0:02\x1b8"
    out.seek(0)
    out.truncate()
    screen.draw("Time 0:02\nboard\nhelp")
    assert out.getvalue() == ""
    screen.draw("Time 0:02\nboard\nhelp", full=True)
    assert out.getvalue() == CLEAR + "Time 0:02\nboard\nhelp\n> "


async def test_halfmoon_join_races_from_its_standard_input_to_the_results(server_url: str) -> None:
    created = await create_room(server_url)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "halfmoon", "join", created.url, "--name", "Ada",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        cwd=ROOT, env={**os.environ, "LANG": "C"},
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    output = bytearray()

    async def read() -> None:
        assert process.stdout is not None
        while chunk := await process.stdout.read(4096):
            output.extend(chunk)

    reader = asyncio.create_task(read())
    await until(lambda: b"You are the host" in output)
    bots = asyncio.create_task(run_bots(server_url, players=1, room=created.room, think_ms=0, seed=5))
    await until(lambda: b"bot-" in output.rsplit(CLEAR.encode(), 1)[-1])
    process.stdin.write(b"s\n")
    await until(lambda: b"Time 0:0" in output)
    process.stdin.write(b"g\n")
    await asyncio.wait_for(bots, 60)
    status = await asyncio.wait_for(process.wait(), 20)
    await reader
    assert status == 0
    last = output.decode().rsplit(CLEAR, 1)[-1]
    assert last.startswith(f"Results — room {created.room}") and "Ada" in last and "gave up" in last


async def test_q_leaves_the_room_at_once_and_the_host_passes_on(server_url: str) -> None:
    created = await create_room(server_url)
    ada_lines: asyncio.Queue[str | None] = asyncio.Queue()
    ada_screen, bob_screen = RecordingScreen(), RecordingScreen()
    ada = asyncio.create_task(play_race(server_url, created.room, "Ada", ada_lines, ada_screen, tick_s=0.1))
    await until(lambda: "You are the host" in ada_screen.last)
    bob = asyncio.create_task(play_race(server_url, created.room, "Bob", asyncio.Queue(), bob_screen, tick_s=0.1))
    await until(lambda: "Waiting for Ada to start" in bob_screen.last)
    ada_lines.put_nowait("q")
    racer = await asyncio.wait_for(ada, 5)
    assert racer.quit
    await until(lambda: "Ada left." in bob_screen.last and "You are the host" in bob_screen.last)
    bob.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await bob


async def test_bots_refuse_a_race_that_has_already_started(server_url: str) -> None:
    created = await create_room(server_url)
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    screen = RecordingScreen()
    racer = asyncio.create_task(play_race(server_url, created.room, "Ada", lines, screen, tick_s=0.1))
    await until(lambda: "You are the host" in screen.last)
    lines.put_nowait("s")
    await until(lambda: screen.last.startswith("Time "))
    with pytest.raises(RefusedError, match=f"the race in room {created.room} has already started"):
        await asyncio.wait_for(run_bots(server_url, players=1, room=created.room), 10)
    lines.put_nowait("g")
    assert (await asyncio.wait_for(racer, 10)).session.race_over


async def test_the_shipped_bots_declare_themselves_are_shown_as_bots_and_never_ranked(server_url: str) -> None:
    """``halfmoon bot`` joins with ``bot``: every player sees it as a bot (a spectator too), and
    its result, in a sealed race, is not ranked (reason ``bot``)."""
    created = await create_room(server_url)  # a sealed race: a person's result there would be ranked
    assert created.code is None
    reports = await run_bots(server_url, players=2, room=created.room, think_ms=0, seed=3)
    for report in reports:
        session = report.session
        assert session.outcome is not None
        assert (session.outcome.ranked, session.outcome.unranked_reason) == (False, "bot")
        assert all(player.bot for player in session.players.values())
        assert {(r["ranked"], r["unranked_reason"]) for r in session.results or []} == {(False, "bot")}
    lines = results_table(reports[0].session.results or [], reports[0].session.players)
    assert all("[bot]" in line for line in lines[1:])
    assert "Not ranked: a bot is never ranked." in results_screen(reports[0].session, width=200)
