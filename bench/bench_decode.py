"""What decoding and validating a client's message costs, and what msgspec would save, run by
hand: ``taskset -c 1 python bench/bench_decode.py [--rounds 31] [--n 20000]`` (``--quick``: a few
iterations, for CI; ``--out FILE``: the JSON). Figures: docs/benchmarks.md, "Decoding the client's
messages (issue 31)".

Two implementations of the same thing, frame (``str``, as aiohttp hands a text frame) → one of
:data:`halfmoon.protocol.ClientMessage`, or :class:`~halfmoon.errors.BadMessageError`:

- ``current``: :func:`halfmoon.protocol.parse_message`, ``orjson.loads`` then checks by hand;
- ``msgspec``: a tagged union of ``msgspec.Struct`` (``type`` the tag) decoded by one
  ``msgspec.json.Decoder``, turned into the same dataclasses (the handler matches on them) with
  the same checks the types cannot say (names, keys, entropy, positions). Any frame it refuses
  (malformed JSON, a wrong type, an unknown field or type, a value out of range, a bad name) is
  handed to ``parse_message``, so every error a client gets stays the one it gets today, byte for
  byte; and it refuses every frame whose value could differ from ``parse_message``'s (an unknown
  field, which ``orjson`` parses — ``1e999`` is ``bad_json`` there — and ``msgspec`` would skip;
  an integer past 64 bits, which ``orjson`` reads as a float).

Before timing, both are run on every frame below and on ~7,500 mutations of the valid ones
(each field removed, null, or of another type, duplicated, a field added, big integers, …): the
script stops unless each gives the same message, or the same error (code, message, id, reason).

Timing: per frame, ``--rounds`` rounds of ``--n`` calls each (``time.perf_counter_ns``), A and B
alternating in one process (A first in even rounds, B first in odd ones); the median of the
rounds, in ns per message. Then ``msgspec-only``: msgspec's own refusal of a bad frame (the
``ValidationError``), without the fallback — what an error would cost if its text could change.

Then aiohttp's WebSocket reader: which one the server runs (``aiohttp._websocket.reader``'s
``WebSocketReader``: the Cython ``reader_c`` unless ``AIOHTTP_NO_EXTENSIONS`` is set or it is not
built), and the cost per frame of the C and the pure-Python reader, each fed one masked 60-byte
text frame per read (the usual read: one client message) and its queue drained; plus our own
:class:`~halfmoon_server.web.masking.FrameWatcher` on the same read.

msgspec is not a dependency of the project: ``pip install msgspec`` to measure it (without it,
only ``current`` and the readers are measured).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "shared"), str(ROOT / "server")]

from halfmoon.codes import check_contribution  # noqa: E402
from halfmoon.errors import BadMessageError, HalfMoonError  # noqa: E402
from halfmoon.game import Move  # noqa: E402
from halfmoon.positions import parse_position  # noqa: E402
from halfmoon.protocol import (  # noqa: E402
    SERIES_MAX,
    SERIES_MIN,
    TIME_LIMIT_MAX,
    TIME_LIMIT_MIN,
    Accept,
    ClientMessage,
    Daily,
    GiveUp,
    Join,
    Leave,
    MoveMessage,
    Ping,
    Queue,
    Rematch,
    Resume,
    Solo,
    Start,
    Undo,
    Unqueue,
    Watch,
    check_name,
    check_player_key,
    parse_message,
)

KEY = "Qm9iJ3Mga2V5IGZvciBoYWxmIG1vb24gcmFjZXMhIQ"  # 43 URL-safe base64 characters, as the clients make
ENTROPY = "3f9a0c1e5b7d2468ace13579bdf02468"

#: Frames as the clients send them (docs/protocol.md, "A whole race, worked through"; the browser's
#: session.js and the terminal client's ``to_json``), then malformed ones.
VALID: dict[str, str] = {
    "move (pair)": '{"type": "move", "v": 1, "positions": ["8", "12"], "id": 17}',
    # the browser's: JSON.stringify({v: PROTOCOL_VERSION, ...msg}) (net.js), compact, "v" first
    "move (browser)": '{"v":1,"type":"move","positions":["8","12"],"id":17}',
    "move (triple)": '{"type": "move", "v": 1, "positions": ["R3", "5", "12"], "id": 48}',
    "undo": '{"type": "undo", "v": 1, "id": 18}',
    "ping": '{"type": "ping", "v": 1}',
    "join": f'{{"type": "join", "v": 1, "room": "K7WQ2M", "name": "Ada", "player_key": "{KEY}", '
    f'"entropy": "{ENTROPY}"}}',
    "watch": '{"type": "watch", "v": 1, "room": "K7WQ2M"}',
    "resume": '{"type": "resume", "v": 1, "room": "K7WQ2M", "token": "tok-3f9a0c1e5b7d", "since": 41}',
    "start": '{"type": "start", "v": 1, "time_limit_s": 600}',
    "solo": f'{{"type": "solo", "v": 1, "name": "Ada", "code": "HM1-N-AAAAAAB", "player_key": "{KEY}"}}',
    "daily": f'{{"type": "daily", "v": 1, "name": "Ada", "player_key": "{KEY}"}}',
    "rematch": f'{{"type": "rematch", "v": 1, "entropy": "{ENTROPY}"}}',
    "accept": f'{{"type": "accept", "v": 1, "entropy": "{ENTROPY}"}}',
    "give_up": '{"type": "give_up", "v": 1}',
    "leave": '{"type": "leave", "v": 1}',
    "queue": f'{{"type": "queue", "v": 1, "name": "Ada", "player_key": "{KEY}"}}',
    "unqueue": '{"type": "unqueue", "v": 1}',
}
MALFORMED: dict[str, str] = {
    "not JSON": '{"type": "move", "v": 1, "positions": ["8", "12"',
    "bad version": '{"type": "move", "v": 1.0, "positions": ["8", "12"], "id": 3}',
    "unknown type": '{"type": "teleport", "v": 1, "id": 3}',
    "positions of ints": '{"type": "move", "v": 1, "positions": [8, 12], "id": 3}',
    "no such position": '{"type": "move", "v": 1, "positions": ["8", "13"], "id": 3}',
    "id a string": '{"type": "undo", "v": 1, "id": "18"}',
    "name a number": '{"type": "join", "v": 1, "room": "K7WQ2M", "name": 7}',
    # accepted by both (the protocol ignores a field it does not know); msgspec hands it on
    "move + extra field": '{"type": "move", "v": 1, "positions": ["8", "12"], "id": 17, "t": 1765000000000}',
    # what the size check (4096 bytes, web/ws.py) lets through: a name of 4,000 characters
    "join, 4 KB name": '{"type": "join", "v": 1, "room": "K7WQ2M", "name": "' + "a" * 4000 + '"}',
}
FRAMES = VALID | MALFORMED


def outcome(parse: Callable[[str], ClientMessage], frame: str) -> tuple[str, Any]:
    """What a parser makes of a frame: the message, or the error the client would get."""
    try:
        return "message", parse(frame)
    except BadMessageError as exc:
        return "error", (exc.code, exc.message, exc.msg_id, exc.reason)


def mutations() -> list[str]:
    """Variants of every valid frame: each field removed, null, or another type; a field added; a
    field given twice; integers at and past 64 bits; floats; strings that are not what they name."""
    values: list[Any] = [
        None, True, False, 0, -1, 1.0, 1.5, "", "x", "1", "K7WQ2M", "k7wq2m", "Ada", " Ada ", "A" * 21, KEY,
        ENTROPY, [], ["8", "12"], ["R3", "5", "12"], ["1"], ["1", "2", "3", "4"], ["8", 12], {}, {"a": 1},
        2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 29, 30, 7200, 7201, 2, 11,
    ]  # fmt: skip
    out: list[str] = []
    for frame in VALID.values():
        data = json.loads(frame)
        for field in [*data, "id", "since", "bot", "code", "player_key", "entropy", "series", "extra"]:
            if field in data:
                out.append(json.dumps({k: v for k, v in data.items() if k != field}))
            for value in values:
                out.append(json.dumps(data | {field: value}))
        body = frame[:-1]
        out += [
            body + ', "v": 2}', body + ', "type": "ping"}', body + ', "id": 5, "id": 6}', body + ', "x": 1e999}',
            body + ', "x": 18446744073709551616}', body + ', "positions": ["1", "2"]}', body + ', "bot": true}',
            body + ', "name": "Bob"}', frame + " ", " " + frame, "[" + frame + "]", frame[:-1], body + ', "id": 1e2}',
        ]  # fmt: skip
    return out


# -- the msgspec implementation ---------------------------------------------------------------------


try:
    import msgspec
except ImportError:  # not a dependency: only ``current`` is measured
    msgspec = None

if msgspec is not None:
    # orjson reads an integer past 64 bits as a float, which parse_message refuses (msgspec takes
    # no bound past int64: 2**63 to 2**64 - 1 are handed to parse_message too)
    Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]

    class Base(msgspec.Struct, tag_field="type", forbid_unknown_fields=True, kw_only=True):
        v: Literal[1]
        id: Int64 | None = None

    class JoinS(Base, tag="join"):
        room: str
        name: str
        player_key: str | None = None
        entropy: str | None = None
        bot: bool = False

    class WatchS(Base, tag="watch"):
        room: str

    class SoloS(Base, tag="solo"):
        name: str
        code: str | None = None
        player_key: str | None = None
        bot: bool = False

    class DailyS(Base, tag="daily"):
        name: str
        player_key: str | None = None
        bot: bool = False

    class ResumeS(Base, tag="resume"):
        room: str
        token: str
        since: Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)] | None = None
        entropy: str | None = None

    class StartS(Base, tag="start"):
        time_limit_s: Annotated[int, msgspec.Meta(ge=TIME_LIMIT_MIN, le=TIME_LIMIT_MAX)] | None = None
        series: Annotated[int, msgspec.Meta(ge=SERIES_MIN, le=SERIES_MAX)] | None = None

    class MoveS(Base, tag="move"):
        positions: Annotated[list[str], msgspec.Meta(min_length=2, max_length=3)]

    class EntropyS(Base):
        entropy: str | None = None

    class RematchS(EntropyS, tag="rematch"):
        pass

    class AcceptS(EntropyS, tag="accept"):
        pass

    class QueueS(Base, tag="queue"):
        name: str
        player_key: str

    class UndoS(Base, tag="undo"):
        pass

    class GiveUpS(Base, tag="give_up"):
        pass

    class LeaveS(Base, tag="leave"):
        pass

    class PingS(Base, tag="ping"):
        pass

    class UnqueueS(Base, tag="unqueue"):
        pass


def msgspec_parser() -> tuple[Callable[[str], ClientMessage], Callable[[str], object]] | None:
    """``(parse, decode)``: the msgspec implementation and its bare decoder; None without msgspec."""
    if msgspec is None:
        return None
    decoder = msgspec.json.Decoder(
        JoinS | WatchS | SoloS | DailyS | ResumeS | StartS | MoveS | RematchS | AcceptS | QueueS | UndoS | GiveUpS
        | LeaveS | PingS | UnqueueS
    )  # fmt: skip
    decode = decoder.decode
    refused = (msgspec.DecodeError, HalfMoonError, ValueError)  # (ValidationError is a DecodeError)

    def key(value: str | None) -> str | None:
        return None if value is None else check_player_key(value)

    def entropy(value: str | None) -> str | None:
        return None if value is None else check_contribution(value)

    def convert(m: Any) -> ClientMessage:
        kind = type(m)
        if kind is MoveS:  # (the hot path: first)
            return MoveMessage(Move(tuple(parse_position(p) for p in m.positions)), m.id)
        if kind is UndoS:
            return Undo(m.id)
        if kind is PingS:
            return Ping()
        if kind is JoinS:
            return Join(m.room, check_name(m.name), key(m.player_key), entropy(m.entropy), bot=m.bot)
        if kind is WatchS:
            return Watch(m.room)
        if kind is ResumeS:
            return Resume(m.room, m.token, m.since, entropy(m.entropy))
        if kind is StartS:
            return Start(m.time_limit_s, m.series)
        if kind is SoloS:
            return Solo(check_name(m.name), m.code, key(m.player_key), bot=m.bot)
        if kind is DailyS:
            return Daily(check_name(m.name), key(m.player_key), bot=m.bot)
        if kind is RematchS:
            return Rematch(entropy(m.entropy))
        if kind is AcceptS:
            return Accept(entropy(m.entropy))
        if kind is QueueS:
            return Queue(check_name(m.name), check_player_key(m.player_key))
        if kind is GiveUpS:
            return GiveUp()
        if kind is LeaveS:
            return Leave()
        return Unqueue()

    def parse(frame: str) -> ClientMessage:
        try:
            return convert(decode(frame))
        except refused:  # parse_message says what is wrong, as it always has
            return parse_message(frame)

    return parse, decode


# -- timing -----------------------------------------------------------------------------------------


def per_call_ns(fn: Callable[[str], object], frame: str, n: int) -> float:
    clock = time.perf_counter_ns
    start = clock()
    for _ in range(n):
        try:
            fn(frame)
        except Exception:  # a refused frame: what is timed is the refusal
            continue
    return (clock() - start) / n


def ab(a: Callable[[str], object], b: Callable[[str], object], frame: str, rounds: int, n: int) -> tuple[float, float]:
    """Medians, ns per call, of ``rounds`` rounds of ``n`` calls, A and B alternating."""
    times_a: list[float] = []
    times_b: list[float] = []
    per_call_ns(a, frame, n // 10 + 1)  # warm both
    per_call_ns(b, frame, n // 10 + 1)
    for r in range(rounds):
        if r % 2:
            times_b.append(per_call_ns(b, frame, n))
            times_a.append(per_call_ns(a, frame, n))
        else:
            times_a.append(per_call_ns(a, frame, n))
            times_b.append(per_call_ns(b, frame, n))
    return statistics.median(times_a), statistics.median(times_b)


def solo(fn: Callable[[str], object], frame: str, rounds: int, n: int) -> float:
    per_call_ns(fn, frame, n // 10 + 1)
    return statistics.median(per_call_ns(fn, frame, n) for _ in range(rounds))


# -- aiohttp's WebSocket reader ----------------------------------------------------------------------


def masked_text_frame(payload: bytes, mask: bytes = b"\x37\xfa\x21\x3d") -> bytes:
    """A client's frame: FIN + text, masked (RFC 6455 5.3); payload under 126 bytes."""
    assert len(payload) < 126
    return bytes((0x81, 0x80 | len(payload))) + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload))


class _Protocol:
    """What aiohttp's queue asks of the connection: whether reading is paused."""

    _reading_paused = False

    def pause_reading(self) -> None:
        self._reading_paused = True

    def resume_reading(self) -> None:
        self._reading_paused = False


def readers() -> dict[str, Any]:
    """Which reader aiohttp runs here, and each one's modules (None when it has no such split)."""
    import aiohttp
    from aiohttp import helpers, web_ws

    info: dict[str, Any] = {
        "aiohttp": aiohttp.__version__,
        "AIOHTTP_NO_EXTENSIONS": os.environ.get("AIOHTTP_NO_EXTENSIONS"),
        "NO_EXTENSIONS": helpers.NO_EXTENSIONS,
        # the reader the server's WebSocketResponse (web/masking.py's MaskedWebSocket) makes
        "in_use": web_ws.WebSocketReader.__module__,
    }
    try:
        from aiohttp._websocket import reader_py
    except ImportError:  # an aiohttp before 3.11: http_websocket holds its only (Python) reader
        from aiohttp import http_websocket

        info["modules"] = {"py": (http_websocket.WebSocketReader, None)}
        return info
    modules: dict[str, Any] = {"py": (reader_py.WebSocketReader, reader_py.WebSocketDataQueue)}
    try:
        from aiohttp._websocket import reader_c  # type: ignore[attr-defined]

        modules["c"] = (reader_c.WebSocketReader, reader_c.WebSocketDataQueue)
    except ImportError:
        pass
    info["modules"] = modules
    return info


def reader_ns(reader_cls: Any, queue_cls: Any, frame: bytes, rounds: int, n: int) -> float:
    """ns per frame: one frame per ``feed_data`` (decoded to text, as aiohttp's server asks), then
    taken from the queue with ``await queue.read()``, as ``WebSocketResponse.receive`` does."""
    if queue_cls is None:  # (an aiohttp before 3.11: its own queue type; not measured)
        raise RuntimeError("no separate queue class")
    loop = asyncio.new_event_loop()
    try:
        queue = queue_cls(_Protocol(), 2**16, loop=loop)
        parser = reader_cls(queue, 16384, compress=False, decode_text=True)
        feed, read = parser.feed_data, queue.read

        async def run(count: int) -> float:
            clock = time.perf_counter_ns
            start = clock()
            for _ in range(count):
                feed(frame)
                await read()
            return (clock() - start) / count

        first = loop.run_until_complete(_first(feed, read, frame))
        assert first == VALID["move (pair)"], first
        loop.run_until_complete(run(n // 10 + 1))
        return statistics.median(loop.run_until_complete(run(n)) for _ in range(rounds))
    finally:
        loop.close()


async def _first(feed: Callable[[bytes], object], read: Callable[[], Any], frame: bytes) -> Any:
    feed(frame)
    message = await read()
    return message.data


def watcher_ns(frame: bytes, rounds: int, n: int) -> float:
    from halfmoon_server.web.masking import FrameWatcher

    feed = FrameWatcher().feed
    assert feed(frame)
    return statistics.median(per_call_ns(lambda _: feed(frame), "", n) for _ in range(rounds))


# -- the run ---------------------------------------------------------------------------------------


def check_same(parse_b: Callable[[str], ClientMessage]) -> int:
    """Both parsers give the same message or the same error on every frame and mutation."""
    frames = [*FRAMES.values(), *mutations()]
    for frame in frames:
        a, b = outcome(parse_message, frame), outcome(parse_b, frame)
        if a != b:
            raise SystemExit(f"the parsers differ on {frame[:200]!r}:\n current {a}\n msgspec {b}")
    return len(frames)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--n", type=int, default=20000, help="calls per round")
    ap.add_argument("--quick", action="store_true", help="a few calls, to check that it runs")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    rounds, n = (3, 50) if args.quick else (args.rounds, args.n)

    impl = msgspec_parser()
    summary: dict[str, Any] = {
        "python": platform.python_version(),
        "cpu_affinity": sorted(os.sched_getaffinity(0)),
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
        "rounds": rounds,
        "calls_per_round": n,
        "frames": [],
    }
    if impl is not None:
        import msgspec

        summary["msgspec"] = msgspec.__version__
        summary["frames_checked_same"] = check_same(impl[0])
    else:
        summary["msgspec"] = None
        for frame in FRAMES.values():
            outcome(parse_message, frame)
    import orjson

    summary["orjson"] = orjson.__version__
    print(
        f"python {summary['python']}, orjson {summary['orjson']}, msgspec {summary['msgspec']}, "
        f"CPUs {summary['cpu_affinity']}, load {' '.join(summary['loadavg'])}; "
        f"median of {rounds} rounds of {n} calls, ns per message"
    )
    if impl is not None:
        print(f"same message or same error on {summary['frames_checked_same']} frames (the table's, their mutations)")
    print(f"{'frame':<22} {'bytes':>5} {'outcome':<34} {'current':>9} {'msgspec':>9} {'saved':>8} {'msgspec-only':>12}")
    for label, frame in FRAMES.items():
        kind, value = outcome(parse_message, frame)
        said = type(value).__name__ if kind == "message" else f"error {value[0]}"
        row: dict[str, Any] = {"frame": label, "bytes": len(frame.encode()), "outcome": said}
        if impl is None:
            row["current_ns"] = solo(parse_message, frame, rounds, n)
            print(f"{label:<22} {row['bytes']:>5} {said:<34} {row['current_ns']:>9.0f}")
        else:
            row["current_ns"], row["msgspec_ns"] = ab(parse_message, impl[0], frame, rounds, n)
            row["saved_ns"] = row["current_ns"] - row["msgspec_ns"]
            only = ""
            if kind == "error":
                row["msgspec_only_ns"] = solo(impl[1], frame, rounds, n)
                only = f"{row['msgspec_only_ns']:.0f}"
            print(
                f"{label:<22} {row['bytes']:>5} {said:<34} {row['current_ns']:>9.0f} {row['msgspec_ns']:>9.0f} "
                f"{row['saved_ns']:>8.0f} {only:>12}"
            )
        summary["frames"].append(row)

    info = readers()
    frame = masked_text_frame(VALID["move (pair)"].encode())
    summary["reader"] = {k: v for k, v in info.items() if k != "modules"}
    summary["reader"]["frame_bytes"] = len(frame)
    for name, (reader_cls, queue_cls) in info["modules"].items():
        try:
            summary["reader"][f"{name}_ns"] = reader_ns(reader_cls, queue_cls, frame, rounds, n)
        except (RuntimeError, TypeError) as exc:  # an aiohttp whose reader takes other arguments
            summary["reader"][f"{name}_ns"] = None
            print(f"reader {name}: not measured ({exc})")
    if "c" in info["modules"]:  # the Python reader with the Python mask too: AIOHTTP_NO_EXTENSIONS=1
        from aiohttp._websocket import helpers as ws_helpers
        from aiohttp._websocket import reader_py

        masking = reader_py.websocket_mask
        reader_py.websocket_mask = ws_helpers._websocket_mask_python
        try:
            summary["reader"]["py_no_extensions_ns"] = reader_ns(*info["modules"]["py"], frame, rounds, n)
        finally:
            reader_py.websocket_mask = masking
    summary["reader"]["frame_watcher_ns"] = watcher_ns(frame, rounds, n)
    r = summary["reader"]
    print(
        f"aiohttp {r['aiohttp']}: the reader in use is {r['in_use']} "
        f"(AIOHTTP_NO_EXTENSIONS={r['AIOHTTP_NO_EXTENSIONS']}); "
        f"per {r['frame_bytes']}-byte masked frame (fed, decoded, queued, taken): "
        + ", ".join(f"{k[:-3]} {v:.0f} ns" for k, v in r.items() if k.endswith("_ns") and v is not None)
    )
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main()
