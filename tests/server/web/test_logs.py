"""The server's log: a request aiohttp's parser rejects is one INFO line, not a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import sys
from pathlib import Path

import aiohttp
import pytest
from aiohttp import WSMessage, WSMsgType, web
from sqlalchemy.engine import make_url

from halfmoon_server.web import keys, logs
from tests.conftest import ROOT, require_service
from tests.server.conftest import StartServer
from tests.server.instances import Instance, RedisServer
from tests.server.support import WsClient, make_sealed_room

sys.path.insert(0, str(ROOT / "bench"))
from tcp_proxy import TcpProxy

MALFORMED = (
    b"POST /api/rooms HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
    b"Content-Type: application/json\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"
)


async def send_raw(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()


async def test_a_malformed_chunk_is_a_400_and_one_log_line_without_traceback(tmp_path: Path) -> None:
    server = await Instance(tmp_path / "data").start()
    try:
        answer = await send_raw(server.port, MALFORMED)
        garbage = await send_raw(server.port, b"\x16\x03\x01 not http at all\r\n\r\n")
        healthy = await send_raw(server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    finally:
        server.stop()
    assert answer.startswith(b"HTTP/1.") and b" 400 " in answer.split(b"\r\n", 1)[0]
    assert garbage.startswith(b"HTTP/1.") and b" 400 " in garbage.split(b"\r\n", 1)[0]
    assert b" 200 " in healthy.split(b"\r\n", 1)[0]
    text = server.log.read_text()
    assert "Traceback" not in text, text[-3000:]
    assert "ERROR" not in text, text[-3000:]
    assert "sqlalchemy.engine" not in text, text[-3000:]  # no statement logged at INFO
    assert text.count("malformed request refused (400): Invalid character in chunk size") == 1, text[-3000:]


def test_the_filter_leaves_other_aiohttp_errors_alone() -> None:
    record = logging.LogRecord("aiohttp.server", logging.ERROR, __file__, 1, "Error handling request", None, None)
    try:
        raise RuntimeError("a real bug")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    assert logs.MalformedRequestFilter().filter(record)
    assert record.levelno == logging.ERROR and record.exc_info is not None


def test_debug_logging_never_prints_a_database_statement_s_values() -> None:
    """aiosqlite logs each statement and its parameters (a stored daily code among them) at DEBUG."""
    root = logging.getLogger()
    quiet = (*logs.QUIET_LOGGERS, "sqlalchemy")
    saved = (list(root.handlers), root.level, {n: logging.getLogger(n).level for n in quiet})
    try:
        logs.configure("DEBUG", "text")
        assert root.isEnabledFor(logging.DEBUG)
        for name in logs.QUIET_LOGGERS:
            assert not logging.getLogger(name).isEnabledFor(logging.DEBUG), name
        assert not logging.getLogger("sqlalchemy.engine.Engine").isEnabledFor(logging.INFO)
    finally:
        handlers, level, levels = saved
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, value in levels.items():
            logging.getLogger(name).setLevel(value)


async def test_a_connection_reset_inside_the_receive_loop_is_a_quiet_close(
    start_server: StartServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A client PING arriving as its connection dies: aiohttp's receive() answers it with a PONG on
    the closing transport and raises a ConnectionResetError. Found by the soak run (one
    'internal error on GET /ws' traceback); it is a close like any other."""
    server = await start_server()
    real_receive = web.WebSocketResponse.receive

    async def receive(self: web.WebSocketResponse, timeout: float | None = None) -> WSMessage:
        # aiohttp >= 3.10.5 raises ClientConnectionResetError, a ConnectionResetError
        raise ConnectionResetError("Cannot write to closing transport")

    async with aiohttp.ClientSession() as session:
        monkeypatch.setattr(web.WebSocketResponse, "receive", receive)
        with caplog.at_level(logging.DEBUG):
            async with session.ws_connect(server.make_url("/ws")) as ws:
                closing = await ws.receive(timeout=5)
            monkeypatch.setattr(web.WebSocketResponse, "receive", real_receive)
        async with session.get(server.make_url("/healthz")) as health:
            assert health.status == 200
    assert closing.type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.CLOSING)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    assert "Traceback" not in caplog.text


def test_a_connection_the_pool_cannot_close_is_one_warning_line_through_the_handler() -> None:
    """SQLAlchemy's pool logs ``Exception closing connection`` at ERROR with a traceback when an
    outage cuts a close short (a flaky failure of the PostgreSQL outage test): through the
    server's handler it is one WARNING line; any other ERROR stays one."""
    import io

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(logs.TEXT_FORMAT))
    handler.addFilter(logs.PoolCloseFilter())
    pool_log = logging.getLogger("sqlalchemy.pool.impl.AsyncAdaptedQueuePool")
    other = logging.getLogger("halfmoon_server.test_other")
    for logger in (pool_log, other):
        logger.addHandler(handler)
        logger.propagate = False
    try:
        try:
            raise ConnectionResetError("Connection lost")
        except ConnectionResetError:
            pool_log.error("Exception closing connection %r", "<AdaptedConnection x>", exc_info=True)
            other.error("something else failed", exc_info=True)
    finally:
        for logger in (pool_log, other):
            logger.removeHandler(handler)
            logger.propagate = True
    lines = stream.getvalue().splitlines()
    pool_lines = [line for line in lines if "AsyncAdaptedQueuePool" in line]
    assert len(pool_lines) == 1 and " WARNING " in pool_lines[0], lines
    assert "could not be closed cleanly (ConnectionResetError: Connection lost)" in pool_lines[0]
    assert any(" ERROR " in line and "something else failed" in line for line in lines)
    assert "Traceback" in stream.getvalue()  # the other error keeps its traceback


async def test_connections_refused_at_the_per_address_cap_log_one_line_and_no_traceback(tmp_path: Path) -> None:
    """One address over its TCP cap (2 × the WebSocket cap + 16): each connection past it is
    closed before a byte is read. 300 of them, some with a request already on the way, write one
    line (docs/security.md: one per 10 s), not one traceback each."""
    server = await Instance(tmp_path / "data", args=("--max-connections-per-address", "2")).start()
    held: list[asyncio.StreamWriter] = []
    try:
        for _ in range(20):  # the cap: 2 × 2 + 16
            _, writer = await asyncio.open_connection("127.0.0.1", server.port)
            held.append(writer)
        await asyncio.sleep(0.2)

        async def refused() -> None:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            with contextlib.suppress(ConnectionError, TimeoutError):
                await asyncio.wait_for(reader.read(), 5)
            writer.close()

        await asyncio.gather(*(refused() for _ in range(300)))
        await asyncio.sleep(0.5)
    finally:
        for writer in held:
            writer.close()
        server.stop()
    text = server.log.read_text()
    assert "Traceback" not in text and "ERROR" not in text, text[-3000:]
    lines = [line for line in text.splitlines() if "refused: it holds" in line]
    assert len(lines) == 1, lines


async def _poll(base: str, paths: tuple[str, ...], seconds: float, pollers: int = 1) -> int:
    """Ask ``paths`` over and over for ``seconds``, from ``pollers`` clients at once (an
    operator's monitoring, players' pages); how many answers came."""
    answers = 0

    async def poller() -> None:
        nonlocal answers
        async with aiohttp.ClientSession() as http:
            over = asyncio.get_running_loop().time() + seconds
            while asyncio.get_running_loop().time() < over:
                for path in paths:
                    async with http.get(base + path) as response:
                        await response.read()
                        answers += 1
                await asyncio.sleep(0.02)

    await asyncio.gather(*(poller() for _ in range(pollers)))
    return answers


def _lines_since(log: Path, offset: int) -> list[str]:
    return log.read_bytes()[offset:].decode("utf-8", "replace").splitlines()


#: What an outage of OUTAGE_S may write at most: a line per cause (readiness, storage, the Redis
#: feed's reconnections with their back-off) every 10 s, not one per request.
OUTAGE_S = 8.0
MAX_LINES = 12


@pytest.mark.slow
@pytest.mark.redis
async def test_a_redis_outage_under_polling_writes_a_few_lines_not_one_per_poll(tmp_path: Path) -> None:
    require_service("redis-server", RedisServer.binary() is not None, "no redis-server binary; apt-get install redis")
    redis = await RedisServer(tmp_path / "redis").start()
    server = await Instance(tmp_path / "data", db="memory://", redis=redis.url).start()
    try:
        offset = server.log.stat().st_size
        redis.kill()
        answers = await _poll(server.base, ("/readyz", "/healthz", "/api/rooms/ZZZZZZ"), OUTAGE_S)
        lines = [line for line in _lines_since(server.log, offset) if '"GET ' not in line]  # (the access log)
    finally:
        server.stop()
        redis.kill()
    # (with the newest redis-py a refused connection fails at once: hundreds of answers; the lowest
    # allowed, 5.0.1, may wait out its time-out in each: a few)
    assert answers >= 6
    assert "Traceback" not in "\n".join(lines)
    assert len(lines) <= MAX_LINES, f"{len(lines)} lines for {answers} answers:\n" + "\n".join(lines)


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("mode", ["reset", "blackhole"])
async def test_a_postgresql_outage_under_polling_writes_a_few_lines_not_one_per_poll(
    tmp_path: Path, pg_database: str, mode: str
) -> None:
    url = make_url(pg_database)
    with TcpProxy(url.port or 5432, url.host or "127.0.0.1") as proxy:
        db_url = url.set(port=proxy.port).render_as_string(hide_password=False)
        server = await Instance(tmp_path / "data", db=db_url, args=("--db-timeout", "1")).start()
        try:
            offset = server.log.stat().st_size
            proxy.cut(mode)  # type: ignore[arg-type]
            paths = ("/readyz", "/healthz", "/api/leaderboard/HM1-N-AAAAAAB", "/api/daily/2026-11-30/leaderboard")
            answers = await _poll(server.base, paths, OUTAGE_S)
            lines = [line for line in _lines_since(server.log, offset) if '"GET ' not in line]
            proxy.restore()
        finally:
            server.stop()
    assert answers >= 8
    assert "Traceback" not in "\n".join(lines)
    assert len(lines) <= MAX_LINES, f"{len(lines)} lines for {answers} answers:\n" + "\n".join(lines)


def rename_table(db: Path, old: str, new: str) -> None:
    """Rename a table of the server's SQLite database from beside it. Run off the event loop
    (``asyncio.to_thread``): a write of the server's that holds the database's lock needs the loop
    to finish, and a wait for the lock on the loop's own thread would wait it out for nothing."""
    with contextlib.closing(sqlite3.connect(db, timeout=30)) as conn, conn:
        conn.execute(f"ALTER TABLE {old} RENAME TO {new}")


async def test_no_log_line_carries_a_sealed_code_or_salt_when_recording_a_game_fails(
    start_server: StartServer, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/security.md: "no log line carries a deal code, a salt or a token". When storing a game
    fails, SqlStorage.save_game wraps SQLAlchemy's error text — which lists the statement's
    parameters (code, salt, the record) — in a StorageError that Recorder logs with log.exception,
    while the other racers still play. Create the engine with hide_parameters=True (and keep
    exception text out of StorageError)."""
    server = await start_server()
    room_id, _ = await make_sealed_room(server)
    salt = server.app[keys.LOBBY].rooms[room_id].race.seed  # what opens the seal (a salt in the previous release)
    assert salt is not None
    db = server.app[keys.SETTINGS].data_dir / "halfmoon.db"
    ada = await WsClient.connect(server, "ada")
    bob = await WsClient.connect(server, "bob")
    await ada.send("join", room=room_id, name="Ada")
    await ada.next("welcome")
    await bob.send("join", room=room_id, name="Bob")
    await bob.next("welcome")
    await ada.send("start")
    await ada.next("started")
    code = str(server.app[keys.LOBBY].rooms[room_id].race.code)
    await asyncio.to_thread(rename_table, db, "games", "games_away")  # the database fails: the games table is gone
    caplog.set_level(logging.INFO)
    await ada.send("give_up")
    await ada.next("game_over")
    async with asyncio.timeout(10):  # (the store is tried beside the race, which goes on)
        while not any("storing a game failed" in record.getMessage() for record in caplog.records):
            await asyncio.sleep(0.02)
    await asyncio.to_thread(rename_table, db, "games_away", "games")
    text = "\n".join(
        record.getMessage() + (logging.Formatter().formatException(record.exc_info) if record.exc_info else "")
        for record in caplog.records
    )
    for client in (ada, bob):
        await client.close()
    assert code not in text and salt not in text, [line for line in text.splitlines() if code in line or salt in line]
