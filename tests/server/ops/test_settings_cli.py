"""Settings from flags and ``HALFMOON_*`` variables, the daily secret kept in the data directory,
and ``halfmoon serve`` itself: it starts, says where it listens and which database, and answers."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

import aiohttp
import pytest

from halfmoon.compiled import compiled
from halfmoon_server.errors import SettingsError
from halfmoon_server.settings import Settings, load_secret


def test_settings_from_environment_and_flags(tmp_path: Path) -> None:
    env = {
        "HALFMOON_HOST": "0.0.0.0",
        "HALFMOON_PORT": "9000",
        "HALFMOON_DB": "postgresql+asyncpg://u@h/db",
        "HALFMOON_DATA_DIR": str(tmp_path),
        "HALFMOON_SECRET": "s3cret-s3cret-s3cret-s3cret-s3cret",
        "HALFMOON_DAILY_REQUIRES_WINNABLE": "0",
        "HALFMOON_ALLOWED_ORIGINS": "https://a.example, https://b.example",
    }
    settings = Settings.from_env(env, port=9100)  # a flag wins over its variable
    assert (settings.host, settings.port, settings.db_url) == ("0.0.0.0", 9100, "postgresql+asyncpg://u@h/db")
    assert settings.secret == b"s3cret-s3cret-s3cret-s3cret-s3cret" and settings.daily_requires_winnable is False
    assert settings.allowed_origins == ("https://a.example", "https://b.example")
    defaults = Settings.from_env({"HALFMOON_DATA_DIR": str(tmp_path)})
    assert defaults.database_url() == f"sqlite+aiosqlite:///{tmp_path.resolve() / 'halfmoon.db'}"
    with pytest.raises(SettingsError, match="HALFMOON_PORT='eighty'"):
        Settings.from_env({"HALFMOON_PORT": "eighty"})
    with pytest.raises(SettingsError, match="port 70000"):
        Settings.from_env({}, port=70000)


def test_the_daily_secret_is_created_once_and_kept(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "fresh")
    first = load_secret(settings)
    path = tmp_path / "fresh" / "daily-secret"
    assert len(first) >= 32 and oct(path.stat().st_mode & 0o777) == "0o600"
    assert load_secret(settings) == first  # the same secret after a restart
    assert load_secret(Settings(data_dir=tmp_path, secret=b"given")) == b"given"


async def test_halfmoon_serve_starts_and_logs_where_it_listens(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = tmp_path / "data"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "halfmoon", "serve", "--port", str(port), "--data-dir", str(data),
        "--no-winnable-daily", "--solver-workers", "0",
        stderr=asyncio.subprocess.PIPE, env={**os.environ, "HALFMOON_SECRET": ""},
    )
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(200):
                try:
                    health = await http.get(f"http://127.0.0.1:{port}/healthz")
                    break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
            assert await health.json() == {"status": "ok"}
    finally:
        process.terminate()
        _, stderr = await process.communicate()
    log = stderr.decode()
    assert f"listening on http://127.0.0.1:{port}" in log
    assert f"; {'compiled' if compiled() else 'pure-Python'} build)" in log, "which build runs, said at start-up"
    assert f"sqlite+aiosqlite:///{data.resolve() / 'halfmoon.db'}" in log
    assert (data / "halfmoon.db").exists() and (data / "daily-secret").exists()
    assert "Traceback" not in log


@pytest.mark.parametrize(
    ("argv", "env", "sync", "commit"),
    [
        ([], {}, "normal", "auto"),
        (["--journal-commit", "thread", "--journal-sync", "full"], {}, "full", "thread"),
        ([], {"HALFMOON_JOURNAL_COMMIT": "thread"}, "normal", "thread"),
        (["--journal-commit", "auto"], {"HALFMOON_JOURNAL_COMMIT": "thread"}, "normal", "auto"),  # the flag wins
    ],
)
def test_the_journal_flags_and_variables_reach_the_servers_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], env: dict[str, str], sync: str, commit: str
) -> None:
    import argparse

    from halfmoon_server.errors import ServerError
    from halfmoon_server.ops import cli

    for name in [k for k in os.environ if k.startswith("HALFMOON_")]:
        monkeypatch.delenv(name)
    for name, value in {"HALFMOON_DATA_DIR": str(tmp_path), **env}.items():
        monkeypatch.setenv(name, value)
    seen: list[Settings] = []

    async def preflight(settings: Settings) -> None:  # where serve would open its stores: stop there
        seen.append(settings)
        raise ServerError("stopped by the test")

    monkeypatch.setattr(cli, "preflight", preflight)
    monkeypatch.setattr(cli.logs, "configure", lambda *args: None)  # (the test process's logging stays)
    parser = argparse.ArgumentParser()
    cli.register_serve(parser.add_subparsers())
    assert cli.run_serve(parser.parse_args(["serve", *argv])) == 1
    assert [(s.journal_sync, s.journal_commit) for s in seen] == [(sync, commit)]
