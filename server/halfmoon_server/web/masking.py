"""RFC 6455 §5.1: "a server MUST close the connection upon receiving a frame that is not masked".
aiohttp's reader unmasks what is masked and takes the rest as it comes; :class:`MaskedWebSocket`
watches the client's bytes as they arrive and closes the connection (code 1002, protocol error)
at the first frame header without the mask bit, before the frame reaches the game.

The watcher only follows frame boundaries (2-14 header bytes, then the payload's length to
skip), a few operations per frame; the parsing itself stays aiohttp's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

log = logging.getLogger("halfmoon_server.masking")

#: A close frame with code 1002 (protocol error), unmasked as a server's frames are.
CLOSE_PROTOCOL_ERROR = b"\x88\x02\x03\xea"


class FrameWatcher:
    """Follows a client's frame boundaries; ``feed`` is False once a frame came unmasked.
    ``heard`` is set on every read (the server's heartbeat clears it when it looks)."""

    __slots__ = ("_header", "_skip", "heard", "violated")

    def __init__(self) -> None:
        self._header = bytearray()
        self._skip = 0
        self.heard = False
        self.violated = False

    def feed(self, data: bytes) -> bool:
        self.heard = True
        size = len(data)
        # the usual read: one whole small masked frame (a client's message), nothing pending
        if size >= 6 and not self._skip and not self._header and not self.violated:
            second = data[1]
            short = second & 0x7F
            if second & 0x80 and short < 126 and short == size - 6:
                return True
        i = 0
        while i < size and not self.violated:
            if self._skip:
                step = min(self._skip, size - i)
                self._skip -= step
                i += step
                continue
            if not self._header and size - i >= 2:  # the usual case: a whole header in this read
                second = data[i + 1]
                if not second & 0x80:
                    self.violated = True
                    break
                short = second & 0x7F
                extra = 2 if short == 126 else 8 if short == 127 else 0
                end = i + 2 + extra + 4  # the length and the mask key
                if end <= size:
                    self._skip = short if not extra else int.from_bytes(data[i + 2 : i + 2 + extra], "big")
                    i = end
                    continue
            self._header.append(data[i])  # a header split across reads: byte by byte
            i += 1
            header = self._header
            if len(header) < 2:
                continue
            if not header[1] & 0x80:
                self.violated = True
                break
            short = header[1] & 0x7F
            extra = 2 if short == 126 else 8 if short == 127 else 0
            if len(header) == 2 + extra + 4:  # the length and the mask key are in
                length = short if not extra else int.from_bytes(header[2 : 2 + extra], "big")
                self._skip = length
                self._header = bytearray()
        return not self.violated


class _WatchedParser:
    """aiohttp's WebSocket reader, fed only while every frame so far was masked."""

    def __init__(self, parser: Any, watcher: FrameWatcher, on_unmasked: Callable[[], None]) -> None:
        self._parser = parser
        self._watcher = watcher
        self._on_unmasked = on_unmasked

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        if not self._watcher.feed(data):
            self._on_unmasked()
            return True, b""
        result: tuple[bool, bytes] = self._parser.feed_data(data)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._parser, name)


class MaskedWebSocket(web.WebSocketResponse):
    """A :class:`aiohttp.web.WebSocketResponse` that closes the connection on an unmasked frame.
    Its ``watcher`` sees every read of the client's bytes (``watcher.heard``)."""

    watcher: FrameWatcher | None = None

    def _post_start(self, request: web.BaseRequest, protocol: str | None, writer: Any) -> None:
        handler = request.protocol
        watcher = self.watcher = FrameWatcher()
        tail = bytes(getattr(handler, "_message_tail", b""))  # what came with the handshake
        unmasked_with_handshake = bool(tail) and not watcher.feed(tail)
        if unmasked_with_handshake:  # never let aiohttp parse it into a message
            setattr(handler, "_message_tail", b"")  # noqa: B010
        super()._post_start(request, protocol, writer)
        transport = request.transport

        def refuse() -> None:
            log.info("closing a WebSocket that sent an unmasked frame (RFC 6455 5.1)")
            if transport is not None and not transport.is_closing():
                transport.write(CLOSE_PROTOCOL_ERROR)
                asyncio.get_running_loop().call_soon(transport.close)

        parser = getattr(handler, "_payload_parser", None)
        if parser is None:
            self.watcher = None  # an aiohttp that keeps its parser elsewhere: nothing to watch
            return
        setattr(handler, "_payload_parser", _WatchedParser(parser, watcher, refuse))  # noqa: B010
        if unmasked_with_handshake:
            refuse()
