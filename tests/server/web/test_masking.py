"""The masking watcher (halfmoon_server.web.masking.FrameWatcher) follows a client's frame boundaries
however the bytes are split into reads: whole headers in one read (its fast path) or a header
cut anywhere (byte by byte), short, 16-bit and 64-bit lengths, and it flags exactly the first
unmasked frame."""

from __future__ import annotations

import asyncio
import random

import pytest

from halfmoon_server.web.masking import FrameWatcher
from tests.server.conftest import StartServer


def frame(payload_size: int, *, masked: bool = True) -> bytes:
    """A client text frame with a payload of ``payload_size`` bytes."""
    if payload_size < 126:
        head = bytes((0x81, (0x80 if masked else 0) | payload_size))
    elif payload_size < 65536:
        head = bytes((0x81, (0x80 if masked else 0) | 126)) + payload_size.to_bytes(2, "big")
    else:
        head = bytes((0x81, (0x80 if masked else 0) | 127)) + payload_size.to_bytes(8, "big")
    key = b"\x11\x22\x33\x44" if masked else b""
    return head + key + b"x" * payload_size


def reference(stream: bytes) -> int | None:
    """Where the first unmasked frame starts in ``stream`` (None: every frame is masked)."""
    i = 0
    while i + 2 <= len(stream):
        if not stream[i + 1] & 0x80:
            return i
        short = stream[i + 1] & 0x7F
        extra = 2 if short == 126 else 8 if short == 127 else 0
        length = short if not extra else int.from_bytes(stream[i + 2 : i + 2 + extra], "big")
        i += 2 + extra + 4 + length
    return None


def split(stream: bytes, rng: random.Random) -> list[bytes]:
    """The stream cut into reads of random sizes (1 byte to a few frames)."""
    reads, i = [], 0
    while i < len(stream):
        step = rng.choice((1, 2, 3, 5, 7, rng.randint(1, 400)))
        reads.append(stream[i : i + step])
        i += step
    return reads


SIZES = (0, 1, 60, 125, 126, 200, 65535, 65536, 70000)


@pytest.mark.parametrize("seed", range(40))
def test_masked_frames_split_anywhere_pass(seed: int) -> None:
    rng = random.Random(seed)
    stream = b"".join(frame(rng.choice(SIZES)) for _ in range(rng.randint(1, 12)))
    watcher = FrameWatcher()
    assert all(watcher.feed(read) for read in split(stream, rng))
    assert not watcher.violated


@pytest.mark.parametrize("seed", range(40))
def test_the_first_unmasked_frame_is_caught_wherever_the_reads_fall(seed: int) -> None:
    rng = random.Random(1000 + seed)
    frames = [frame(rng.choice(SIZES)) for _ in range(rng.randint(0, 8))]
    frames.append(frame(rng.choice(SIZES), masked=False))
    frames += [frame(rng.choice(SIZES)) for _ in range(rng.randint(0, 3))]
    stream = b"".join(frames)
    bad_at = reference(stream)
    assert bad_at is not None
    watcher, fed = FrameWatcher(), 0
    for read in split(stream, rng):
        ok = watcher.feed(read)
        fed += len(read)
        # refused exactly once the unmasked frame's second byte (the mask bit) has come in
        assert ok is (fed < bad_at + 2), (fed, bad_at)
        if not ok:
            break
    assert watcher.violated


def test_a_watcher_that_refused_stays_refused() -> None:
    watcher = FrameWatcher()
    assert not watcher.feed(frame(10, masked=False))
    assert not watcher.feed(frame(10))


@pytest.mark.parametrize("seed", range(20))
def test_reads_of_one_whole_frame_each_the_usual_case_are_followed(seed: int) -> None:
    """A client's message usually arrives as one read of one whole frame (the fast path); mixed
    with cut reads, the watcher still catches exactly the unmasked one."""
    rng = random.Random(2000 + seed)
    frames = [frame(rng.choice((0, 1, 60, 119, 120, 125, 126, 200))) for _ in range(rng.randint(1, 20))]
    bad = rng.randrange(len(frames) + 1)  # == len(frames): none is unmasked
    if bad < len(frames):
        frames[bad] = frame(rng.choice((0, 60, 125)), masked=False)
    watcher = FrameWatcher()
    for n, whole in enumerate(frames):
        reads = [whole] if rng.random() < 0.7 else split(whole, rng)
        results = [watcher.feed(read) for read in reads]
        if n == bad:
            assert not results[-1] and watcher.violated
            return
        assert all(results), n
    assert not watcher.violated


def test_a_read_as_long_as_a_short_frame_but_cut_from_a_longer_one_is_not_taken_for_a_whole_frame() -> None:
    """A 16-bit or 64-bit length's marker (126, 127) with a read of 132 or 133 bytes: the frame
    goes on in the next read, whose payload bytes are not a header."""
    for size, marker in ((200, 126), (70000, 127)):
        long = frame(size)
        watcher = FrameWatcher()
        assert watcher.feed(long[: marker + 6])
        payload_rest = long[marker + 6 :]
        assert watcher.feed(payload_rest), "the rest of the payload is payload, not a header"
        assert not watcher.feed(frame(3, masked=False)), "and the next frame is still followed"


async def test_an_unmasked_frame_sent_with_the_handshake_never_reaches_the_game(start_server: StartServer) -> None:
    """masking.py feeds the handshake's tail to its watcher only after aiohttp's set_parser has
    already parsed it (inside super()._post_start): an unmasked frame written in the same TCP
    segment as the upgrade request is still dispatched — the server sends its close 1002 and then
    answers the frame (here a ping: a pong follows the close frame). Check the tail before
    super()._post_start (or clear ``_message_tail`` and feed it through the watched parser)."""
    server = await start_server()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    ping = b'{"type": "ping", "v": 1}'
    writer.write(
        b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        + bytes((0x81, len(ping)))
        + ping  # unmasked, in the same write as the handshake
    )
    data = b""
    try:
        async with asyncio.timeout(3):
            while chunk := await reader.read(4096):
                data += chunk
    except TimeoutError:
        pass
    writer.close()
    head, _, frames = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101"), head
    assert frames == b"\x88\x02\x03\xea", f"the unmasked frame reached the game: {frames!r}"
