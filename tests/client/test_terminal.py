"""Standard input without blocking the event loop: a pipe through ``add_reader``, a regular
file through a thread — both give the typed lines and then ``None``."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from halfmoon_client.terminal import stdin_lines


async def drain(queue: asyncio.Queue[str | None]) -> list[str | None]:
    got: list[str | None] = []
    async with asyncio.timeout(5):
        while not got or got[-1] is not None:
            got.append(await queue.get())
    return got


async def test_a_pipe_is_read_by_the_event_loop_line_by_line() -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, encoding="utf-8") as stream:
        queue = stdin_lines(stream)
        os.write(write_fd, b"1 8\nR3 5")
        await asyncio.sleep(0.05)
        assert queue.get_nowait() == "1 8" and queue.empty()  # half a line waits for its end
        os.write(write_fd, b" 12\nu\n")
        os.close(write_fd)
        assert await drain(queue) == ["R3 5 12", "u", None]


async def test_a_regular_file_is_read_by_a_thread(tmp_path: Path) -> None:
    path = tmp_path / "input.txt"
    path.write_text("s\ng\n", encoding="utf-8")
    with path.open(encoding="utf-8") as stream:
        assert await drain(stdin_lines(stream)) == ["s", "g", None]
