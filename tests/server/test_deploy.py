"""The deployment files: nginx's configuration passes ``nginx -t`` and upgrades WebSockets; the
systemd unit and the container files run the real command."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
from pathlib import Path

import aiohttp
import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; types-PyYAML is not a dev dependency

from tests.conftest import ROOT
from tests.server.conftest import StartServer

DEPLOY = ROOT / "deploy"


def test_nginx_config_is_valid_and_upgrades_websockets(nginx_path: str) -> None:
    config = DEPLOY / "nginx.conf"
    result = subprocess.run(
        [nginx_path, "-t", "-c", str(config), "-p", str(DEPLOY)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    text = config.read_text()
    ws_block = text[text.index("location = /ws") :]
    ws_block = ws_block[: ws_block.index("}")]
    assert "proxy_set_header Upgrade $http_upgrade;" in ws_block
    assert "proxy_set_header Connection $connection_upgrade;" in ws_block
    assert "proxy_http_version 1.1;" in ws_block
    assert "proxy_set_header Host $http_host;" in ws_block  # the Origin check compares with Host


def test_service_and_containers_run_halfmoon_serve() -> None:
    unit = (DEPLOY / "halfmoon.service").read_text()
    assert "ExecStart=/opt/halfmoon/venv/bin/halfmoon serve" in unit
    assert "HALFMOON_DATA_DIR=/var/lib/halfmoon" in unit
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert 'CMD ["halfmoon", "serve"]' in dockerfile and "/healthz" in dockerfile
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert set(compose["services"]) == {"db", "server"}
    assert compose["services"]["server"]["environment"]["HALFMOON_DB"].startswith("postgresql+asyncpg://")
    assert compose["services"]["server"]["depends_on"]["db"]["condition"] == "service_healthy"


async def test_a_websocket_game_through_nginx(nginx_path: str, start_server: StartServer, tmp_path: Path) -> None:
    server = await start_server()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    text = (DEPLOY / "nginx.conf").read_text()
    text = text.replace("server 127.0.0.1:8080;", f"server 127.0.0.1:{server.port};")
    text = text.replace("listen 8000;", f"listen 127.0.0.1:{port};")
    text = text.replace("/tmp/halfmoon-nginx", str(tmp_path / "nginx"))
    text = text.replace("worker_processes auto;", "worker_processes 1;\ndaemon off;")
    config = tmp_path / "nginx.conf"
    config.write_text(text)
    nginx = await asyncio.create_subprocess_exec(
        nginx_path, "-c", str(config), "-p", str(tmp_path), stderr=asyncio.subprocess.PIPE
    )
    try:
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as http:
            for _ in range(100):
                try:
                    health = await http.get(f"{base}/healthz")
                    break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
            assert await health.json() == {"status": "ok"}
            async with http.ws_connect(f"{base}/ws", headers={"Origin": base}) as ws:
                await ws.send_str(json.dumps({"type": "solo", "v": 1, "name": "Ada"}))
                welcome = json.loads((await ws.receive(timeout=5)).data)
                assert welcome["type"] == "welcome" and welcome["room"]["phase"] == "running"
    finally:
        nginx.terminate()
        await nginx.wait()
