"""The client's subcommands of ``halfmoon``: ``join``, ``quick``, ``watch``, ``race``, ``bot``, ``history``, ``link``.

Each ``register_X(sub)`` adds its parser and sets ``func(args) -> exit status``; the command
runs its coroutine with :func:`asyncio.run`. A client error (unreachable server, unknown room,
name taken…) becomes one line on standard error and exit status 1 — never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from halfmoon.cli import positive_int
from halfmoon_client.address import DEFAULT_SERVER, normalize_server, parse_room_or_link
from halfmoon_client.bots import run_bots
from halfmoon_client.errors import ClientError
from halfmoon_client.ghost import Ghost
from halfmoon_client.racer import Racer
from halfmoon_client.rest import create_room, history, linked_account_sync, stored_game, terminal_code_sync
from halfmoon_client.screens import history_lines, results_table
from halfmoon_client.seats import SeatBook
from halfmoon_client.strategy import STRATEGIES
from halfmoon_client.terminal import AnsiScreen, play_race, stdin_lines, wait_in_queue, watch_room
from halfmoon_client.words import say

if TYPE_CHECKING:
    from halfmoon.cli.screen import Screen

    Sub = argparse._SubParsersAction[argparse.ArgumentParser]
T = TypeVar("T")


def _default_lang() -> str:
    return "it" if os.environ.get("LANG", "").lower().startswith("it") else "en"


def _server_arg(p: argparse.ArgumentParser, *, required: bool = False) -> None:
    default = os.environ.get("HALFMOON_SERVER", DEFAULT_SERVER)
    p.add_argument(
        "--server",
        metavar="URL",
        required=required,
        default=None if required else default,
        help=f"the server (default {default}; $HALFMOON_SERVER)"
        if not required
        else "the server, e.g. " + DEFAULT_SERVER,
    )


def _run(command: str, coroutine: Coroutine[Any, Any, T]) -> tuple[int, T | None]:
    """Run a coroutine; a :class:`ClientError` becomes one line on stderr and status 1."""
    try:
        return 0, asyncio.run(coroutine)
    except ClientError as exc:
        print(f"halfmoon {command}: {exc}", file=sys.stderr)
        return 1, None


# -- join --------------------------------------------------------------------------------------


def register_join(sub: Sub) -> None:
    p = sub.add_parser(
        "join",
        help="race in a room from the terminal",
        description="Join a race room and play in the terminal. Type a move as positions ('1 8', "
        "'R3 5 12'); 'u' undoes, 'g' gives up, 'e' switches the move-error explanations, "
        "'s' starts the race (host), 'q' leaves.",
    )
    p.add_argument("room", metavar="ROOM_OR_LINK", help="a room id (K7WQ2M) or a room link")
    p.add_argument("--name", required=True, help="your nickname (1-20 characters)")
    _server_arg(p)
    p.add_argument("--lang", choices=("it", "en"), default=_default_lang(), help="language (default from $LANG)")
    p.add_argument("--move-errors", action="store_true", help="explain refused moves («Errori di mossa»)")
    p.add_argument(
        "--time-limit",
        type=positive_int,
        metavar="S",
        help="race time limit in seconds, if you start it (default 1800)",
    )
    p.add_argument(
        "--rematch",
        action="store_true",
        help="stay in the room after the race: 'r' proposes a rematch, 'a' accepts one, 'q' leaves",
    )
    p.add_argument(
        "--series",
        type=positive_int,
        metavar="N",
        help="if you start the race, make it the first of a series of N (2-10) with a points table",
    )
    p.add_argument(
        "--ghost",
        metavar="GAME",
        help="race a stored game's run too (GET /api/games/GAME; its lane moves on the race's clock): "
        "a room on its deal is made with 'halfmoon race --code CODE'",
    )
    p.add_argument(
        "--no-resume",
        action="store_true",
        help="do not resume a game kept from an earlier run, nor keep this one "
        "(seats are kept in $HALFMOON_STATE_DIR or ~/.local/state/halfmoon)",
    )
    p.set_defaults(func=run_join)


def run_join(args: argparse.Namespace) -> int:
    try:
        server, room = parse_room_or_link(args.room, default_server=args.server)
    except ClientError as exc:
        print(f"halfmoon join: {exc}", file=sys.stderr)
        return 1
    screen = AnsiScreen(sys.stdout)
    color = sys.stdout.isatty()

    async def main() -> int:
        ghost = None if args.ghost is None else Ghost.from_game(await stored_game(server, args.ghost))
        racer = await play_race(
            server,
            room,
            args.name,
            stdin_lines(),
            screen,
            lang=args.lang,
            move_errors=args.move_errors,
            color=color,
            time_limit_s=args.time_limit,
            seats=None if args.no_resume else SeatBook.default(),
            series=args.series,
            stay=args.rematch or args.series is not None,
            player_key=SeatBook.default().player_key(server),
            ghost=ghost,
        )
        return 0 if racer.done else 1

    status, result = _run("join", main())
    if result is not None:
        print()
    return status if result is None else result


# -- quick -------------------------------------------------------------------------------------


def register_quick(sub: Sub) -> None:
    p = sub.add_parser(
        "quick",
        help="race strangers: join the quick-race queue",
        description="Join the quick-race queue («Gara veloce»): the server matches you with 1 to 5 other players "
        "into a race on a deal nobody knows in advance (ranked). The screen shows how many are in and the "
        "countdown; 'q' leaves the queue. Once matched, the race is played as with 'halfmoon join'.",
    )
    p.add_argument("--name", required=True, help="your nickname (1-20 characters)")
    _server_arg(p)
    p.add_argument("--lang", choices=("it", "en"), default=_default_lang(), help="language (default from $LANG)")
    p.add_argument("--move-errors", action="store_true", help="explain refused moves («Errori di mossa»)")
    p.set_defaults(func=run_quick)


async def quick_race(
    server: str,
    name: str,
    lines: asyncio.Queue[str | None],
    screen: Screen,
    *,
    lang: str = "en",
    move_errors: bool = False,
    color: bool = False,
    tick_s: float = 1.0,
    seats: SeatBook | None = None,
) -> Racer | None:
    """Queue, then race the room the queue matched (None: the player left the queue)."""
    book = seats or SeatBook.default()
    # the queue holds a player by their key: one that cannot be kept is made for this run alone
    key = book.player_key(server) or secrets.token_urlsafe(32)
    matched = await wait_in_queue(server, name, key, lines, screen, lang=lang, tick_s=tick_s)
    if matched is None:
        return None
    room, racing_as = matched
    return await play_race(
        server, room, racing_as, lines, screen,
        lang=lang, move_errors=move_errors, color=color, tick_s=tick_s, seats=book, player_key=key,
    )  # fmt: skip


def run_quick(args: argparse.Namespace) -> int:
    try:
        server = normalize_server(args.server)
    except ClientError as exc:
        print(f"halfmoon quick: {exc}", file=sys.stderr)
        return 1
    screen = AnsiScreen(sys.stdout)
    lang, color = args.lang, sys.stdout.isatty()
    main = quick_race(server, args.name, stdin_lines(), screen, lang=lang, move_errors=args.move_errors, color=color)
    status, racer = _run("quick", main)
    print()
    if status:
        return status
    return 0 if racer is None or racer.done else 1


# -- history -----------------------------------------------------------------------------------


def register_history(sub: Sub) -> None:
    p = sub.add_parser(
        "history",
        help="your games on a server",
        description="Show your games on a server — counts, wins, clean wins (no undo), the best "
        "time per deal, the daily streak — read with the player key kept in the state directory "
        "($HALFMOON_STATE_DIR or ~/.local/state/halfmoon) and sent with every 'halfmoon join'.",
    )
    _server_arg(p)
    p.add_argument("--lang", choices=("it", "en"), default=_default_lang(), help="language (default from $LANG)")
    p.add_argument("--limit", type=positive_int, default=20, help="the latest games to list (default 20)")
    p.set_defaults(func=run_history)


def run_history(args: argparse.Namespace) -> int:
    try:
        server = normalize_server(args.server)
    except ClientError as exc:
        print(f"halfmoon history: {exc}", file=sys.stderr)
        return 1
    book = SeatBook.default()
    key = book.player_key(server, create=False)
    if key is None:  # no game played from here yet: nothing to read, and no key is made for it
        print("\n".join(history_lines({"games": 0}, server, args.lang)))
        return 0
    status, answer = _run("history", history(server, key, limit=min(args.limit, 1000)))
    if answer is None:
        return status
    print("\n".join(history_lines(answer, server, args.lang)))
    print()
    print(say("history_key", args.lang, path=book.path.with_name("player-keys.json")))
    return 0


# -- link --------------------------------------------------------------------------------------

#: How often ``halfmoon link`` asks whether its code was approved.
LINK_POLL_S = 2.0


def register_link(sub: Sub) -> None:
    p = sub.add_parser(
        "link",
        help="link this terminal to your account",
        description="Link this terminal's player key to your account on a server: the command shows a "
        "short code; type it in the account page of a browser where you are signed in (within 10 minutes). "
        "Your games from here then join the account's history, and your account's name is yours here "
        "in ranked play.",
    )
    _server_arg(p)
    p.add_argument("--lang", choices=("it", "en"), default=_default_lang(), help="language (default from $LANG)")
    p.set_defaults(func=run_link)


async def link_terminal(
    server: str, key: str, lang: str, *, now_ms: Callable[[], int] | None = None, poll_s: float = LINK_POLL_S
) -> bool:
    """Show a code and wait until a signed-in browser approves it (True) or it expires (False).
    Raises :class:`ClientError`."""
    clock = now_ms or (lambda: int(time.time() * 1000))
    account = await asyncio.to_thread(linked_account_sync, server, key)
    if account is not None:
        print(say("link_already", lang, account=account))
        return True
    code, expires_at = await asyncio.to_thread(terminal_code_sync, server, key)
    print(say("link_code", lang, server=server, code=code))
    print(say("link_waiting", lang), flush=True)
    while clock() < expires_at:
        await asyncio.sleep(poll_s)
        account = await asyncio.to_thread(linked_account_sync, server, key)
        if account is not None:
            print(say("link_done", lang, account=account))
            return True
    print(say("link_expired", lang))
    return False


def run_link(args: argparse.Namespace) -> int:
    try:
        server = normalize_server(args.server)
    except ClientError as exc:
        print(f"halfmoon link: {exc}", file=sys.stderr)
        return 1
    key = SeatBook.default().player_key(server)
    if key is None:
        print("halfmoon link: no player key can be kept in the state directory", file=sys.stderr)
        return 1
    status, linked = _run("link", link_terminal(server, key, args.lang))
    return status if linked is None else (0 if linked else 1)


# -- watch -------------------------------------------------------------------------------------


def register_watch(sub: Sub) -> None:
    p = sub.add_parser("watch", help="spectate a race live", description="Watch every player's board in a room, live.")
    p.add_argument("room", metavar="ROOM_OR_LINK", help="a room id (K7WQ2M) or a room link")
    _server_arg(p)
    p.add_argument("--lang", choices=("it", "en"), default=_default_lang(), help="language (default from $LANG)")
    p.set_defaults(func=run_watch)


def run_watch(args: argparse.Namespace) -> int:
    try:
        server, room = parse_room_or_link(args.room, default_server=args.server)
    except ClientError as exc:
        print(f"halfmoon watch: {exc}", file=sys.stderr)
        return 1
    status, _ = _run("watch", watch_room(server, room, AnsiScreen(sys.stdout, prompt=""), lang=args.lang))
    return status


# -- race --------------------------------------------------------------------------------------


def register_race(sub: Sub) -> None:
    p = sub.add_parser("race", help="create a race room", description="Create a race room and print its id and link.")
    _server_arg(p)
    p.add_argument("--code", help="the deal code to race on (default: a random deal)")
    p.set_defaults(func=run_race)


def run_race(args: argparse.Namespace) -> int:
    try:
        server = normalize_server(args.server)
    except ClientError as exc:
        print(f"halfmoon race: {exc}", file=sys.stderr)
        return 1
    status, created = _run("race", create_room(server, args.code))
    if created is None:
        return status
    print(f"room {created.room}")
    print(f"link {created.url}")
    print(f"code {created.code}" if created.code else f"sealed (commitment {created.commitment})")
    print(f"join with: halfmoon join {created.room} --name NICK --server {server}")
    return 0


# -- bot ---------------------------------------------------------------------------------------


def _milliseconds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of milliseconds: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"cannot think for a negative time: {value}")
    return value


def register_bot(sub: Sub) -> None:
    p = sub.add_parser(
        "bot",
        help="run bot players in real races",
        description="Join N bots that play real moves over real connections until the race ends, "
        "then print the results. With --create, new rooms are made (8 bots at most each); the "
        "first bot of each is the host and starts once all have joined.",
    )
    _server_arg(p, required=True)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--room", help="a room to join (its host starts the race)")
    where.add_argument("--create", action="store_true", help="create the room(s) and start the race(s)")
    p.add_argument("--players", type=positive_int, required=True, metavar="N", help="how many bots")
    p.add_argument("--strategy", choices=sorted(STRATEGIES), default="greedy", help="how bots choose (default greedy)")
    p.add_argument("--think", type=_milliseconds, default=300, metavar="MS", help="ms between moves (default 300)")
    p.add_argument("--time-limit", type=positive_int, metavar="S", help="race time limit in seconds (with --create)")
    p.add_argument("--seed", type=int, help="random seed for reproducible choices")
    p.add_argument("--lang", choices=("it", "en"), default=_default_lang(), help=argparse.SUPPRESS)
    p.set_defaults(func=run_bot)


def run_bot(args: argparse.Namespace) -> int:
    try:
        server = normalize_server(args.server)
        room = None if args.room is None else parse_room_or_link(args.room, default_server=server)[1]
    except ClientError as exc:
        print(f"halfmoon bot: {exc}", file=sys.stderr)
        return 1
    status, reports = _run(
        "bot",
        run_bots(
            server,
            players=args.players,
            room=room,
            strategy=args.strategy,
            think_ms=args.think,
            time_limit_s=args.time_limit,
            seed=args.seed,
            on_room=lambda room, link, count: print(f"room {room}: {count} bots · {link}", flush=True),
        ),
    )
    if reports is None:
        return status
    shown: set[str] = set()
    for report in reports:
        if report.room in shown:
            continue
        shown.add(report.room)
        session = report.session
        print(say("results", args.lang, room=session.room, code=session.code or "—"))
        for line in results_table(session.results or [], session.players, args.lang):
            print("  " + line)
        print()
    return 0
