"""The deployment files: nginx's configuration passes ``nginx -t`` and upgrades WebSockets; the
systemd unit and the container files run the real command."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
import subprocess
from pathlib import Path

import aiohttp
import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; types-PyYAML is not a dev dependency

from tests.conftest import ROOT
from tests.ports import free_port
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
    for routed in (settings, re.sub(r"#.*", "", (DEPLOY / "nginx-site.conf").read_text())):
        # routing by room (tests/server/system/test_routing.py runs it): the hash before keepalive
        upstream = routed[routed.index("upstream halfmoon") :]
        assert upstream.index("hash $halfmoon_room consistent;") < upstream.index("keepalive")
        assert re.search(r"map \$uri \$halfmoon_room \{[^}]*/ws\s+\$arg_room;", routed)
    assert "./nginx.conf:/etc/halfmoon/nginx.conf:ro" in (DEPLOY / "compose.yaml").read_text(), "compose runs this file"
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
    for name, service in services.items():
        assert service["restart"] == "unless-stopped", name
        assert service["network_mode"] == "host", f"{name}: every service on the host's network"
        assert service["build"]["network"] == "host", f"{name}: its build too"
        assert "env_file" not in service, f"{name}: no secret in an environment"
        assert "ports" not in service  # (host networking publishes nothing)
    secret_files = {name: secret["file"] for name, secret in compose["secrets"].items()}
    assert set(secret_files) == {
        *("halfmoon_secret", "halfmoon_db", "postgres_password"),
        *("halfmoon_redis", "redis_password"),
    }
    assert services["db"]["environment"] == {"POSTGRES_PASSWORD_FILE": "/run/secrets/postgres_password"}
    ports = set()
    for name in ("server1", "server2", "server3"):
        environment = services[name]["environment"]
        assert not {"HALFMOON_SECRET", "HALFMOON_DB", "HALFMOON_REDIS"} & set(environment), "secrets are files"
        assert environment["HALFMOON_SECRET_FILE"] == "/run/secrets/halfmoon_secret"
        assert environment["HALFMOON_DB_FILE"] == "/run/secrets/halfmoon_db"
        assert environment["HALFMOON_REDIS_FILE"] == "/run/secrets/halfmoon_redis"
        assert set(services[name]["secrets"]) == {"halfmoon_secret", "halfmoon_db", "halfmoon_redis"}
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"
        ports.add(int(environment["HALFMOON_PORT"]))
        assert environment["HALFMOON_METRICS_PORT"]
    nginx = re.sub(r"#.*", "", (DEPLOY / "nginx.conf").read_text())
    upstreams = {int(port) for port in re.findall(r"server 127\.0\.0\.1:(\d+)", nginx)}
    assert ports == upstreams == {8081, 8082, 8083}, "nginx.conf's upstreams are the compose instances"
    # PostgreSQL and Redis on ports of their own: not the host's own 5432 and 6379
    assert "5433" in services["db"]["command"] and "6380" in services["redis"]["command"]
    # the image's stage: the dependencies in their own layer (before the server's wheel, which a
    # first stage builds from the sources), the health check on HALFMOON_PORT
    build, image = dockerfile.rsplit("\nFROM ${BASE}\n", 1)
    order = [image.index(step) for step in ("COPY pyproject.toml", "pip install ", "COPY --from=wheel")]
    assert order == sorted(order)
    assert "COPY server" not in image and "gcc" not in image, "no source and no compiler in the image"
    assert "FROM ${BASE} AS wheel" in build and "COPY server" in build and "pip wheel" in build
    assert "ARG BASE=" in dockerfile and "FROM ${BASE}" in dockerfile, "the base is a build argument"
    assert "HALFMOON_PORT" in dockerfile[dockerfile.index("HEALTHCHECK") :]
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", "tests", "data", "**/__pycache__", "deploy/secrets"} <= set(ignored)
    assert "/deploy/secrets/" in (ROOT / ".gitignore").read_text()
    assert "--appendonly" in services["redis"]["command"] and "always" in services["redis"]["command"]


def test_the_compose_redis_asks_for_a_password_kept_in_a_file() -> None:
    """Redis on the host's network answers every local user and program on 127.0.0.1, and it holds
    the live rooms — a sealed race's seed and its racers' contributions (its deal) before the
    start — so the compose stack's Redis requires a password, read from a compose secret and never
    on a command line or in an environment (tests/deploy/test_containers.py connects without it)."""
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    redis = compose["services"]["redis"]
    assert redis["environment"] == {"REDIS_PASSWORD_FILE": "/run/secrets/redis_password"}
    assert redis["secrets"] == ["redis_password"]
    assert not any("pass" in str(argument).lower() for argument in redis["command"]), "no password in argv"
    services = (DEPLOY / "services.Dockerfile").read_text()
    stage = services[services.index("AS redis") :]
    assert 'ENTRYPOINT ["/usr/local/bin/redis-entrypoint"]' in stage
    entrypoint = (DEPLOY / "redis-entrypoint.sh").read_text()
    assert "requirepass" in entrypoint and "REDIS_PASSWORD_FILE" in entrypoint
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


def site_config(upstream: int, http_port: int, https_port: int, folder: Path) -> Path:
    """deploy/nginx-site.conf inside a minimal nginx.conf, with a self-signed certificate, these
    ports, the static files from this tree and every file under ``folder``."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem")],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    site = (DEPLOY / "nginx-site.conf").read_text()
    site = re.sub(r"(?:server 127\.0\.0\.1:808\d [^\n]*\n\s*)+", f"server 127.0.0.1:{upstream};\n    ", site)
    site = re.sub(r"\n\s*listen \[::\]:\d+[^\n]*", "", site)
    site = site.replace("listen 80;", f"listen 127.0.0.1:{http_port};")
    site = site.replace("listen 443 ssl http2;", f"listen 127.0.0.1:{https_port} ssl http2;")
    site = re.sub(r"/etc/letsencrypt/live/[^/]+/fullchain\.pem", str(folder / "cert.pem"), site)
    site = re.sub(r"/etc/letsencrypt/live/[^/]+/privkey\.pem", str(folder / "key.pem"), site)
    site = site.replace("/var/log/nginx/", f"{folder}/").replace("/var/www/letsencrypt", str(folder))
    static = ROOT / "client" / "halfmoon_web" / "static"
    site = re.sub(r"alias [^;]*halfmoon_web/static/;", f"alias {static}/;", site)
    kinds = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    temp = "\n".join(f"    {kind}_temp_path {folder}/{kind};" for kind in kinds)
    config = folder / "nginx.conf"
    config.write_text(
        f"daemon off;\nworker_processes 1;\npid {folder}/nginx.pid;\nerror_log stderr warn;\n"
        f"events {{ worker_connections 256; }}\nhttp {{\n    include /etc/nginx/mime.types;\n{temp}\n{site}\n}}\n"
    )
    return config


async def test_the_site_snippet_passes_nginx_t_and_serves_a_game_over_tls(
    nginx_path: str, start_server: StartServer, tmp_path: Path
) -> None:
    text = re.sub(r"#.*", "", (DEPLOY / "nginx-site.conf").read_text())
    for directive in ("ssl_certificate ", "ssl_certificate_key ", "http2", "gzip on;", "limit_req zone=",
                      "limit_req_zone ", "access_log ", "alias ", "proxy_set_header Upgrade $http_upgrade;"):
        assert directive in text, directive  # fmt: skip
    # as the systemd units run it behind nginx: the scheme and address from nginx's headers
    server = await start_server(trust_forwarded=True)
    http_port, https_port = free_port(), free_port()
    config = site_config(server.port, http_port, https_port, tmp_path)
    check = subprocess.run([nginx_path, "-t", "-c", str(config), "-p", str(tmp_path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    nginx = await asyncio.create_subprocess_exec(
        nginx_path, "-c", str(config), "-p", str(tmp_path), stderr=asyncio.subprocess.PIPE
    )
    base = f"https://127.0.0.1:{https_port}"
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http:
            for _ in range(100):
                try:
                    health = await http.get(f"{base}/healthz")
                    break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
            assert await health.json() == {"status": "ok"}
            redirect = await http.get(f"http://127.0.0.1:{http_port}/", allow_redirects=False)
            assert redirect.status == 301 and redirect.headers["Location"].startswith("https://")
            # the client's files come from nginx itself (Expires), compressed
            css = await http.get(f"{base}/static/css/app.css", headers={"Accept-Encoding": "gzip"})
            assert css.status == 200 and "Expires" in css.headers and css.headers.get("Content-Encoding") == "gzip"
            # the site's headers on nginx's own files too (an add_header in a location drops the
            # server's): HSTS, and no content sniffing, as the instances send with theirs
            for answer in (css, await http.get(f"{base}/static/js/app.js"), health):
                assert answer.headers.get("Strict-Transport-Security") == "max-age=31536000", answer.url
                assert answer.headers.get("X-Content-Type-Options") == "nosniff", answer.url
            assert (await http.get(f"{base}/metrics")).status == 404  # never proxied: each instance's --metrics-port
            async with http.ws_connect(f"wss://127.0.0.1:{https_port}/ws", headers={"Origin": base}) as ws:
                await ws.send_str(json.dumps({"type": "solo", "v": 1, "name": "Ada"}))
                welcome = json.loads((await ws.receive(timeout=5)).data)
                assert welcome["type"] == "welcome" and welcome["room"]["phase"] == "running"
        logged = (tmp_path / "halfmoon.access.log").read_text()
        assert "GET /static/css/app.css" in logged and "GET /ws" in logged
        # HTTP/2 is offered over TLS (ALPN)
        alpn = subprocess.run(
            ["openssl", "s_client", "-alpn", "h2", "-connect", f"127.0.0.1:{https_port}"],
            input="", capture_output=True, text=True, errors="replace", timeout=30,
        )  # fmt: skip
        assert "ALPN protocol: h2" in alpn.stdout, alpn.stdout[-2000:]
    finally:
        nginx.terminate()
        await nginx.wait()


@pytest.mark.parametrize("unit", ["halfmoon.service", "halfmoon@.service"])
def test_the_systemd_units_are_hardened(unit: str, tmp_path: Path) -> None:
    """`systemd-analyze security --offline` rates each unit's exposure at most 3.0 (8.5 before).
    It reads the unit file alone: no running systemd is needed (none runs in a container)."""
    text = (DEPLOY / unit).read_text()
    for option in ("CapabilityBoundingSet=", "RestrictAddressFamilies=", "SystemCallFilter=@system-service",
                   "ProtectKernelTunables=true", "ProtectKernelModules=true", "ProtectKernelLogs=true", "UMask=0077",
                   "LoadCredential=secret:"):
        assert option in text, option  # fmt: skip
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed")
    copy = tmp_path / unit.replace("@.", "@8081.")
    copy.write_text(text)
    result = subprocess.run(
        [tool, "security", "--offline=true", str(copy)], capture_output=True, text=True, errors="replace", timeout=60
    )
    if "--offline" in result.stderr and result.returncode != 0:
        pytest.skip(f"this systemd-analyze has no --offline: {result.stderr.strip()}")
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert match is not None, result.stdout + result.stderr
    assert float(match.group(1)) <= 3.0, result.stdout
    # the figure the unit's own comment gives is the one systemd-analyze gives
    claimed = re.search(r"`systemd-analyze security \S+` rates this (\d+\.\d+)", text)
    assert claimed is not None and claimed.group(1) == match.group(1), (claimed, match.group(1))


@pytest.mark.parametrize("unit", ["halfmoon.service", "halfmoon@.service"])
def test_the_systemd_units_keep_secrets_out_of_the_environment(unit: str) -> None:
    """Secrets are credentials (files this service alone reads), never ``Environment=`` values,
    which anyone who may read /proc/PID/environ (or `systemctl show`) reads too."""
    text = (DEPLOY / unit).read_text()
    settings = [line.strip().lstrip("#") for line in text.splitlines() if "=" in line]
    for variable in ("HALFMOON_SECRET", "HALFMOON_DB", "HALFMOON_REDIS"):
        assert not any(line.startswith(f"Environment={variable}=") for line in settings), variable
    assert "Environment=HALFMOON_SECRET_FILE=%d/secret" in text and "LoadCredential=secret:" in text
    if unit == "halfmoon@.service":  # a cluster: PostgreSQL and Redis, their URLs with passwords
        for name, variable in (("db", "HALFMOON_DB_FILE"), ("redis", "HALFMOON_REDIS_FILE")):
            assert f"LoadCredential={name}:/etc/halfmoon/{name}" in text and f"Environment={variable}=%d/{name}" in text
    assert "HALFMOON_METRICS_PORT=" in text, "/metrics on a port of its own"


def _runbook_routing_check() -> str:
    """The awk program of deploy/RUNBOOK.md's "Check the routing", as the runbook prints it."""
    runbook = (DEPLOY / "RUNBOOK.md").read_text()
    found = re.search(r"awk '(.*?)' \\\n\s*/var/log/nginx/halfmoon\.access\.log", runbook, re.S)
    assert found is not None, "the runbook's routing check is gone"
    return found.group(1)


def test_the_runbooks_routing_check_names_only_rooms_served_by_two_instances(tmp_path: Path) -> None:
    awk = shutil.which("awk")
    if awk is None:
        pytest.skip("no awk here")
    site = (DEPLOY / "nginx-site.conf").read_text()
    assert re.search(r"upstream=\$upstream_addr room=\$halfmoon_room';", site), "the log line the check reads"
    line = (
        '127.0.0.1 - [2026-12-06T11:13:44+00:00] "GET {uri} HTTP/1.1" {status} 120 0.5 "ua" '
        "upstream={up} room={room}\n"
    )
    entries = [
        ("/ws?room=AAAAAA", 101, "127.0.0.1:8081", "AAAAAA"),
        ("/api/rooms/AAAAAA", 200, "127.0.0.1:8081", "AAAAAA"),
        ("/api/rooms", 201, "127.0.0.1:8082", ""),  # no room: round robin, never reported
        ("/healthz", 200, "127.0.0.1:8083", ""),
        # refused by limit_req (429): it reached no instance, then served where it belongs
        ("/ws?room=CCCCCC", 429, "-", "CCCCCC"),
        ("/ws?room=CCCCCC", 101, "127.0.0.1:8083", "CCCCCC"),
        # its instance died: nginx retried on the next one, which serves it from then on
        ("/ws?room=BBBBBB", 101, "127.0.0.1:8081", "BBBBBB"),
        ("/ws?room=BBBBBB", 101, "127.0.0.1:8081, 127.0.0.1:8082", "BBBBBB"),
        ("/ws?room=BBBBBB", 101, "127.0.0.1:8082", "BBBBBB"),
    ]
    log = tmp_path / "halfmoon.access.log"
    log.write_text("".join(line.format(uri=u, status=s, up=up, room=r) for u, s, up, r in entries))
    done = subprocess.run([awk, _runbook_routing_check(), str(log)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert sorted(set(done.stdout.splitlines())) == ["BBBBBB 127.0.0.1:8081 127.0.0.1:8082"]


def test_the_runbook_gives_the_sites_websocket_rate_limit_as_configured() -> None:
    site = (DEPLOY / "nginx-site.conf").read_text()
    zone = re.search(r"zone=halfmoon_ws:\S+ rate=(\d+)r/s;", site)
    burst = re.search(r"limit_req zone=halfmoon_ws burst=(\d+)", site)
    assert zone is not None and burst is not None
    runbook = " ".join((DEPLOY / "RUNBOOK.md").read_text().split())
    assert f"{zone.group(1)} new WebSockets a second in bursts of {burst.group(1)}" in runbook

