"""The deployment files: nginx's configuration passes ``nginx -t`` and upgrades WebSockets; the
systemd unit and the container files run the real command."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
from pathlib import Path

import aiohttp
import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; types-PyYAML is not a dev dependency

from tests.conftest import ROOT
from tests.server.conftest import StartServer

DEPLOY = ROOT / "deploy"


def nginx_config(upstreams: list[int], listen: int, folder: Path) -> Path:
    """deploy/nginx.conf with its upstream servers on these local ports, listening on ``listen``."""
    text = (DEPLOY / "nginx.conf").read_text()
    servers = "".join(f"server 127.0.0.1:{port} max_fails=1 fail_timeout=5s;\n        " for port in upstreams)
    block = re.search(r"upstream halfmoon \{.*?\}", text, re.S)
    assert block is not None
    upstream = re.sub(r"(?:server [^\n]*\n\s*)+", lambda _: servers, block.group(0), count=1)
    text = text.replace(block.group(0), upstream)
    text = text.replace("listen 8000;", f"listen 127.0.0.1:{listen};")
    text = text.replace("/tmp/halfmoon-nginx", str(folder / "nginx"))
    text = text.replace("worker_processes auto;", "worker_processes 1;\ndaemon off;")
    config = folder / "nginx.conf"
    config.write_text(text)
    return config


def test_nginx_config_is_valid_and_upgrades_websockets(nginx_path: str) -> None:
    config = DEPLOY / "nginx.conf"
    result = subprocess.run(
        [nginx_path, "-t", "-c", str(config), "-p", str(DEPLOY)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    text = config.read_text()
    settings = re.sub(r"#.*", "", text)
    assert "ip_hash" not in settings and "sticky" not in settings, "no sticky sessions: any instance serves any room"
    compose_text = (DEPLOY / "nginx-compose.conf").read_text()
    strip = re.compile(r"^\s*#.*$|^\s*server (?:127\.0\.0\.1:808\d|server\d:8080) .*$", re.M)
    assert strip.sub("", compose_text).split() == strip.sub("", text).split(), "the compose copy differs"
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
    services = compose["services"]
    assert set(services) == {"db", "redis", "server1", "server2", "server3", "nginx"}
    for name in ("server1", "server2", "server3"):
        environment = services[name]["environment"]
        assert environment["HALFMOON_DB"].startswith("postgresql+asyncpg://")
        assert environment["HALFMOON_REDIS"].startswith("redis://")
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"
        assert services[name]["restart"] == "unless-stopped"
    assert "--appendonly" in services["redis"]["command"] and "always" in services["redis"]["command"]
    template = (DEPLOY / "halfmoon@.service").read_text()
    assert "Environment=HALFMOON_PORT=%i" in template and "ExecStart=/opt/halfmoon/venv/bin/halfmoon serve" in template


async def test_a_websocket_game_through_nginx(nginx_path: str, start_server: StartServer, tmp_path: Path) -> None:
    server = await start_server()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = nginx_config([server.port], port, tmp_path)
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
