"""Configuration an operator can trust: bad values refused at start with a clear message (a
boolean that is not one, a short secret, an unreachable database or Redis), secrets from files,
every limit settable by flag and variable and listed in docs/server.md with its default; logs as
JSON lines with the room and player, the level from the environment, and an access log that
counts the bytes really sent."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import socket
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from halfmoon_server.clock import ManualClock
from halfmoon_server.errors import SettingsError
from halfmoon_server.ops.cli import register_serve
from halfmoon_server.settings import OPTIONS, Settings
from halfmoon_server.web.app import create_app
from tests.conftest import ROOT
from tests.server.conftest import StartServer
from tests.server.support import WsClient, make_settings

SECRET = "a-daily-secret-of-forty-bytes-for-tests!"


def _serve(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HALFMOON_")}
    return subprocess.run(
        [sys.executable, "-m", "halfmoon", "serve", *args], env={**base, **(env or {})},
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


@pytest.mark.parametrize("raw", ["enable", "2", "nope", "tru"])
def test_a_boolean_that_is_not_one_is_refused(raw: str) -> None:
    with pytest.raises(SettingsError, match=f"HALFMOON_TRUST_FORWARDED={raw!r} is not a boolean"):
        Settings.from_env({"HALFMOON_TRUST_FORWARDED": raw})
    for yes in ("1", "true", "YES", "on"):
        assert Settings.from_env({"HALFMOON_TRUST_FORWARDED": yes}).trust_forwarded is True
    for no in ("0", "false", "No", "off"):
        assert Settings.from_env({"HALFMOON_DAILY_REQUIRES_WINNABLE": no}).daily_requires_winnable is False


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(SettingsError, match="the daily secret is 6 bytes: use at least 32"):
        Settings.from_env({"HALFMOON_SECRET": "s3cret"})
    assert Settings.from_env({"HALFMOON_SECRET": SECRET}).secret == SECRET.encode()


def test_secrets_from_files(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text(SECRET + "\n")
    (tmp_path / "db").write_text("postgresql+asyncpg://halfmoon:pw@db/halfmoon\n")
    (tmp_path / "redis").write_text("redis://:pw@redis:6379/0")
    settings = Settings.from_env(
        {
            "HALFMOON_SECRET_FILE": str(tmp_path / "secret"),
            "HALFMOON_DB_FILE": str(tmp_path / "db"),
            "HALFMOON_REDIS_FILE": str(tmp_path / "redis"),
        }
    )
    assert settings.secret == SECRET.encode()
    assert settings.db_url == "postgresql+asyncpg://halfmoon:pw@db/halfmoon"
    assert settings.redis_url == "redis://:pw@redis:6379/0"
    with pytest.raises(SettingsError, match="both HALFMOON_SECRET and HALFMOON_SECRET_FILE"):
        Settings.from_env({"HALFMOON_SECRET": SECRET, "HALFMOON_SECRET_FILE": str(tmp_path / "secret")})
    with pytest.raises(SettingsError, match=r"HALFMOON_DB_FILE: cannot read .*missing"):
        Settings.from_env({"HALFMOON_DB_FILE": str(tmp_path / "missing")})
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(SettingsError, match="is empty"):
        Settings.from_env({"HALFMOON_SECRET_FILE": str(tmp_path / "empty")})


@pytest.mark.parametrize("field", ["advertise", "public_url"])
@pytest.mark.parametrize(
    "url", ["halfmoon.example.org", "ftp://halfmoon.example.org", "http://", "https://:8443", "http://h:port"]
)
def test_an_advertised_or_public_url_needs_a_scheme_and_a_host(field: str, url: str) -> None:
    with pytest.raises(SettingsError, match="must be http:// or https:// and a host"):
        (Settings(advertise=url) if field == "advertise" else Settings(public_url=url)).validate()


@pytest.mark.parametrize("url", ["http://10.0.0.5:8081", "https://halfmoon.example.org", "http://[::1]:8081/"])
def test_an_advertised_or_public_url_with_a_host_is_taken(url: str) -> None:
    Settings(advertise=url, public_url=url).validate()


@pytest.mark.slow
def test_serve_refuses_bad_settings_with_a_clear_message(tmp_path: Path) -> None:
    (tmp_path / "short").write_text("short")
    cases = [
        ((), {"HALFMOON_TRUST_FORWARDED": "enable"}, "HALFMOON_TRUST_FORWARDED='enable' is not a boolean"),
        (("--secret-file", str(tmp_path / "short")), {}, "the daily secret is 5 bytes"),
        (("--secret-file", str(tmp_path / "nothing")), {}, "--secret-file: cannot read"),
        (("--max-rooms", "0"), {}, "max_rooms must be at least 1"),
        ((), {"HALFMOON_MAX_PLAYERS": "many"}, "HALFMOON_MAX_PLAYERS='many' is not a valid int"),
        ((), {"HALFMOON_LOG_LEVEL": "LOUD"}, "the log level must be one of"),
        ((), {"HALFMOON_JOURNAL_COMMIT": "sometimes"}, "journal_commit must be 'auto' or 'thread'"),
        (("--redis-replicas", "-1"), {}, "redis_replicas cannot be negative"),
        (("--redis-wait-ms", "0"), {}, "redis_wait_ms must be 1-60000 ms"),
        (("--snapshot-every", "-1"), {}, "snapshot_every must be 0 (no snapshots) to 100000 entries"),
        ((), {"HALFMOON_MAX_ROOM_ENTRIES": "10"}, "max_room_entries must be 1000 to 10000000"),
        (("--owner-lease-ms", "100"), {}, "owner_lease_ms must be 300-60000 ms"),
        ((), {"HALFMOON_OWNER_LEASE_MS": "99999"}, "owner_lease_ms must be 300-60000 ms"),
        (("--advertise", "ftp://10.0.0.5"), {}, "the advertised URL must be http:// or https:// and a host"),
        (("--advertise", "http://"), {}, "the advertised URL must be http:// or https:// and a host"),
        (("--public-url", "halfmoon.example.org"), {}, "the public URL must be http:// or https:// and a host"),
    ]
    for args, env, message in cases:
        result = _serve("--data-dir", str(tmp_path / "data"), *args, env=env)
        assert result.returncode == 2, (args, env, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_serve_refuses_an_unreachable_database_or_redis(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    common = ("--data-dir", str(tmp_path / "data"), "--solver-workers", "0", "--port", "0")
    db = _serve(*common, "--db", f"postgresql+asyncpg://halfmoon:hunter2@127.0.0.1:{dead}/halfmoon")
    assert db.returncode == 1, db.stderr
    assert f"the database postgresql+asyncpg://halfmoon:***@127.0.0.1:{dead}/halfmoon cannot be used" in db.stderr
    assert "hunter2" not in db.stderr and "Traceback" not in db.stderr
    redis = _serve(*common, "--db", "memory://", "--redis", f"redis://127.0.0.1:{dead}/0")
    assert redis.returncode == 1, redis.stderr
    assert f"Redis at redis://127.0.0.1:{dead}/0 does not answer" in redis.stderr and "Traceback" not in redis.stderr


def test_every_limit_has_a_flag_a_variable_and_a_line_in_the_docs() -> None:
    docs = (ROOT / "docs" / "server.md").read_text()
    defaults = {f.name: f.default for f in fields(Settings)}
    import argparse

    parser = argparse.ArgumentParser()
    register_serve(parser.add_subparsers())
    for option in OPTIONS:
        row = next((line for line in docs.splitlines() if f"`{option.flag}" in line and option.env in line), None)
        assert row is not None, f"docs/server.md has no row for {option.flag} / {option.env}"
        default = defaults[option.field]
        shown = {int: lambda v: f"{v:,}" if v >= 10_000 else str(v), float: lambda v: f"{v:g}"}[option.kind](default)
        assert f"| `{shown}` |" in row or f"| {shown} |" in row, f"{option.flag}: default {shown} not in {row!r}"
        # (a value each takes: the log format is one of a few)
        raw = "1" if option.field == "room_log_version" else "5000" if option.kind is int else "2.5"
        from_flag = parser.parse_args(["serve", option.flag, raw])
        assert getattr(from_flag, option.field) == option.kind(raw)
        assert getattr(Settings.from_env({option.env: raw}), option.field) == option.kind(raw)
    for name in ("rooms", "players", "connections", "rate"):
        assert any(name in option.field for option in OPTIONS), name


async def test_too_many_connections_from_one_address(start_server: StartServer) -> None:
    server = await start_server(max_connections_per_address=2)
    first = await WsClient.connect(server, "1")
    second = await WsClient.connect(server, "2")
    async with aiohttp.ClientSession() as http, http.ws_connect(server.make_url("/ws")) as third:
        message = await third.receive(timeout=5)
        assert message.type is aiohttp.WSMsgType.CLOSE and message.data == 1013
    await first.close()
    await asyncio.sleep(0.05)
    again = await WsClient.connect(server, "again")  # a place came free
    await again.send("solo", name="Ada")
    assert (await again.next("welcome"))["role"] == "player"
    for client in (second, again):
        await client.close()


async def test_json_logs_access_log_bytes_and_level_from_the_environment(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = {k: v for k, v in os.environ.items() if not k.startswith("HALFMOON_")}
    env = {**base, "HALFMOON_LOG_FORMAT": "json", "HALFMOON_LOG_LEVEL": "debug", "HALFMOON_SECRET": SECRET}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "halfmoon", "serve", "--port", str(port), "--data-dir", str(tmp_path / "data"),
        "--no-winnable-daily", "--solver-workers", "0",
        stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(200):
                try:
                    await http.get(f"{url}/healthz")
                    break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
            # a static file, read as raw bytes off the socket: what the access log must count
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /static/css/app.css HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            raw = await reader.read()
            writer.close()
            assert raw.startswith(b"HTTP/1.1 200")
            async with http.ws_connect(f"{url}/ws") as ws:
                await ws.send_str(json.dumps({"type": "solo", "v": 1, "name": "Ada"}))
                welcome = json.loads((await ws.receive(timeout=5)).data)
                room, player = welcome["room"]["room"], welcome["you"]
                await ws.send_str(json.dumps({"type": "undo", "v": 1}))  # refused, logged at DEBUG with the ids
                assert json.loads((await ws.receive(timeout=5)).data)["code"] == "nothing_to_undo"
    finally:
        process.terminate()
        _, stderr = await process.communicate()
    lines = [json.loads(line) for line in stderr.decode().splitlines() if line.strip()]  # every line parses
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    assert any("listening on" in line["message"] for line in lines)
    static = next(line for line in lines if line.get("path") == "/static/css/app.css")
    assert static["status"] == 200 and static["bytes"] == len(raw), (static, len(raw))
    body = raw.split(b"\r\n\r\n", 1)[1]
    assert static["bytes"] > len(body) > 0  # head and body, not the head alone
    tagged = [line for line in lines if line.get("room") == room and line.get("player") == player]
    assert tagged, "no log line names the room and the player"
    assert any(line["level"] == "DEBUG" for line in lines)
    assert re.match(r"\d{4}-\d\d-\d\dT", lines[0]["time"])


async def test_the_young_generations_threshold_is_the_servers_while_it_runs(tmp_path: Path) -> None:
    before = gc.get_threshold()
    server = TestServer(create_app(make_settings(tmp_path / "data", ManualClock(0), gc_young=12_345)))
    await server.start_server()
    try:
        assert gc.get_threshold() == (12_345, before[1], before[2])
    finally:
        await server.close()
    assert gc.get_threshold() == before  # given back: it is the process's, not the app's
    with pytest.raises(SettingsError, match="gc_young"):
        Settings(gc_young=0).validate()


@pytest.mark.parametrize(
    ("variable", "value"),
    [("HALFMOON_FINISHED_HOLD_S", "1e306"), ("HALFMOON_ABANDON_AFTER_S", "1e306"), ("HALFMOON_COUNTDOWN_S", "1e306")],
)
def test_a_finite_but_huge_timing_is_a_settings_error_not_a_start_up_traceback(variable: str, value: str) -> None:
    """c5942f4 refuses nan and inf so that a bad setting is a one-line SettingsError, not a
    traceback at start-up; but ``Lobby.__init__`` still computes ``int(seconds * 1000)``, and a
    finite 1e306 s is inf once multiplied: ``OverflowError: cannot convert float infinity to
    integer`` when the app starts. (A TTL of 1e16 s passes too and overflows orjson's 64-bit
    integers in every new room's header.) The timings need an upper bound."""
    with pytest.raises(SettingsError):
        Settings.from_env({variable: value})
    with pytest.raises(OverflowError):  # what the server does with it (Lobby.__init__)
        int(float(value) * 1000)


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_finished_hold_must_be_a_finite_number(value: str) -> None:
    """``--finished-hold nan`` passes validation (``nan <= 0`` is False) and the server then fails
    to start with a traceback (``int(nan * 1000)`` in ``Lobby.__init__``); ``inf`` likewise
    (OverflowError). A bad setting should be a one-line SettingsError."""
    with pytest.raises(SettingsError):
        Settings.from_env({"HALFMOON_FINISHED_HOLD_S": value})


def test_snapshot_every_and_the_rooms_cap_are_read_from_flags_and_variables() -> None:
    env = {"HALFMOON_SNAPSHOT_EVERY": "0", "HALFMOON_MAX_ROOM_ENTRIES": "2000"}
    settings = Settings.from_env(env)
    assert (settings.snapshot_every, settings.max_room_entries) == (0, 2000)
    assert (Settings().snapshot_every, Settings().max_room_entries) == (200, 50_000)
    for bad in ({"snapshot_every": 100_001}, {"max_room_entries": 999}, {"max_room_entries": 10_000_001}):
        with pytest.raises(SettingsError):
            Settings().with_changes(**bad).validate()


@pytest.mark.parametrize(("raw", "max_players"), [("1", "8"), ("7", "8"), ("5", "4")])
def test_a_quick_race_holds_two_to_six_players_and_no_more_than_a_race(raw: str, max_players: str) -> None:
    env = {"HALFMOON_QUICK_MAX_PLAYERS": raw, "HALFMOON_MAX_PLAYERS": max_players}
    with pytest.raises(SettingsError, match=f"quick_max_players must be 2-6 .*not {raw}"):
        Settings.from_env(env)
    assert Settings.from_env({"HALFMOON_QUICK_MAX_PLAYERS": "3"}).quick_max_players == 3


@pytest.mark.parametrize(
    ("flag", "field"),
    [
        ("--snapshot-every", "snapshot_every"),
        ("--max-room-entries", "max_room_entries"),
        ("--owner-lease-ms", "owner_lease_ms"),
        ("--room-log-version", "room_log_version"),
    ],
)
def test_the_documented_range_of_a_setting_is_the_one_it_takes(flag: str, field: str) -> None:
    docs = (ROOT / "docs" / "server.md").read_text()
    row = next(line for line in docs.splitlines() if line.startswith(f"| `{flag} "))
    found = re.search(r"\(([\d,]+)[–-]([\d,]+)[;) ]", row)
    assert found is not None, f"docs/server.md gives no range for {flag}: {row!r}"
    low, high = (int(bound.replace(",", "")) for bound in found.groups())
    for value in (low, high):
        Settings.from_env({}, **{field: value})
    for value in (low - 1, high + 1):
        with pytest.raises(SettingsError, match=field):
            Settings.from_env({}, **{field: value})

