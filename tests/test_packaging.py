"""The packages as an operator gets them: an sdist and a wheel built from this tree (the wheel from
the sdist, so the sdist is complete), each with the licence; the wheel's metadata (an SPDX licence
expression, classifiers, project URLs, the database stack an extra); ``py.typed`` in every typed
package; the sdist's own tests run; and the wheel, installed in a venv outside the repository,
serves, and gives operators ``halfmoon solve``.

And the terminal-only install a player makes (``python3 -m pip install ./client``, README.md): in a
fresh venv it holds no solver and no server, ``halfmoon --help`` lists no ``solve``, and ``solve``
and ``serve`` say they come with the server's install."""

from __future__ import annotations

import email
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time
import tomllib
import urllib.request
import venv
import zipfile
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import pytest

from halfmoon.cli import SERVER_INSTALL
from tests.conftest import ROOT
from tests.ports import free_port

TYPED = ("halfmoon", "halfmoon_server", "halfmoon_client", "halfmoon_web")
SERVER_STACK = ("aiohttp", "sqlalchemy", "aiosqlite", "alembic", "prometheus-client", "asyncpg", "redis")


#: What a checkout holds that is no part of the source (.gitignore): left out of the copy built.
_NOT_SOURCE = shutil.ignore_patterns(
    ".git", "node_modules", "__pycache__", "*.egg-info", ".venv", ".pytest_cache", ".mypy_cache", ".ruff_cache",
    ".hypothesis", ".benchmarks", "*.db",
)  # fmt: skip


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build``: the sdist, then the wheel built from it — from a copy of the tree, as
    setuptools writes ``halfmoon.egg-info`` where it builds: in the checkout, another test's
    ``python -m halfmoon`` (run from it, so finding that folder first) would meet it half written,
    with no commands, while the files run on two workers at once."""
    source = tmp_path_factory.mktemp("source") / "halfmoon"
    shutil.copytree(ROOT, source, ignore=_NOT_SOURCE)
    for local in ("data", "build", "dist", "client/build"):
        shutil.rmtree(source / local, ignore_errors=True)
    out = tmp_path_factory.mktemp("dist")
    env = {name: value for name, value in os.environ.items() if name != "HALFMOON_COMPILE"}  # the default build
    result = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(source)],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    if result.returncode != 0 and "No module named build" in result.stderr:
        pytest.skip("the build package is not installed (pip install -e '.[dev]')")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out


def _wheel(dist: Path) -> Path:
    return next(dist.glob("halfmoon-*.whl"))


def _metadata(dist: Path) -> Message:
    with zipfile.ZipFile(_wheel(dist)) as wheel:
        name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(wheel.read(name))


def test_the_default_build_is_pure_python_and_the_sdist_can_build_the_compiled_one(dist: Path) -> None:
    """Without ``HALFMOON_COMPILE=1`` (setup.py) the wheel is for any platform and compiles nothing;
    the sdist carries setup.py and the list of modules it compiles when asked."""
    wheel = _wheel(dist)
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        assert not [n for n in archive.namelist() if n.endswith((".so", ".pyd", ".c"))]
    sdist = next(dist.glob("halfmoon-*.tar.gz"))
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[-1] for name in archive.getnames()}
        pyproject = archive.extractfile(f"halfmoon-{_metadata(dist)['Version']}/pyproject.toml")
        assert pyproject is not None
        compiled = tomllib.loads(pyproject.read().decode())["tool"]["halfmoon"]["compiled"]["modules"]
    assert "setup.py" in names and ".ci/compiled" in names
    assert compiled and all(module in names for module in compiled)


def test_the_wheel_carries_the_licence_metadata_and_py_typed(dist: Path) -> None:
    with zipfile.ZipFile(_wheel(dist)) as wheel:
        names = wheel.namelist()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    for package in TYPED:
        assert f"{package}/py.typed" in names, package
    assert "halfmoon_web/static/index.html" in names
    assert any(n.startswith("halfmoon_server/adapters/migrations/versions/") for n in names)
    # the solver is the server's (an operator's tool), never the engine's
    assert "halfmoon_server/solver/search.py" in names and "halfmoon_server/solver/cli.py" in names
    assert not [n for n in names if n.startswith("halfmoon/") and "solve" in n]
    # nothing else at the top, not what `pip install ./client` leaves in client/build either
    tops = {n.split("/")[0] for n in names if "/" in n}
    assert {top for top in tops if not top.endswith(".dist-info")} == set(TYPED), tops
    meta = _metadata(dist)
    assert meta["License-Expression"] == "MIT"
    assert meta["License"] is None  # the deprecated table is gone
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers and "Programming Language :: Python :: 3.13" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers)  # the expression says it
    # no project URLs: the project has no public address yet, and an invented one would mislead
    assert not meta.get_all("Project-URL")
    # the base install is the engine and the terminal client: the database stack is an extra
    base = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert sorted(r.split(">=")[0].lower() for r in base) == ["orjson", "websockets"]
    assert any(r.startswith("websockets>=15") for r in base)  # an error frame before a close arrives
    server = [r for r in meta.get_all("Requires-Dist") or [] if 'extra == "server"' in r]
    assert any(r.lower().startswith("sqlalchemy[asyncio]>=2.1") for r in server)  # a lost PostgreSQL is a 503


def test_the_sdist_holds_the_licence_and_runnable_tests(dist: Path, tmp_path: Path) -> None:
    sdist = next(dist.glob("halfmoon-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    root = next(tmp_path.glob("halfmoon-*"))
    for path in ("LICENSE", "tests/conftest.py", "tests/vectors/deals.json", "tests/vectors/won_games.json",
                 "client/pyproject.toml"):  # fmt: skip
        assert (root / path).is_file(), path
    for package in TYPED:
        folder = {"halfmoon": "shared", "halfmoon_server": "server"}.get(package, "client")
        assert (root / folder / package / "py.typed").is_file(), package
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(root / d) for d in ("shared", "server", "client"))}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/engine/test_codes.py",
         "tests/engine/test_deal.py", "tests/engine/test_record.py", "tests/server/ops/test_settings_cli.py"],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "error" not in result.stdout.splitlines()[-1]


@pytest.fixture(scope="module")
def wheel_venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv outside the repository with the wheel installed (its dependencies from this
    interpreter's site-packages, so no network is needed). Those are named in a ``.pth`` file:
    ``system_site_packages`` would give the *base* interpreter's, which lack them when this one
    is itself a venv (a fresh machine's). A ``.pth`` path's own ``.pth`` files are not read, so
    an editable install of this tree there does not shadow the wheel."""
    home = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(home)
    site = next((home / "lib").glob("python3*/site-packages"))
    paths = dict.fromkeys(sysconfig.get_path(name) for name in ("purelib", "platlib"))
    (site / "halfmoon_test_dependencies.pth").write_text("".join(f"{path}\n" for path in paths))
    python = home / "bin" / "python"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--ignore-installed",
         str(_wheel(dist))],
        capture_output=True, text=True, timeout=300, env=_clean_env(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return home


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HALFMOON_", "PYTHONPATH"))}
    return {**env, **extra}


@pytest.fixture
def served(wheel_venv: Path, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    server = subprocess.Popen(
        [str(wheel_venv / "bin" / "halfmoon"), "serve", "--port", str(port), "--solver-workers", "0",
         "--no-winnable-daily", "--metrics-on-app-port"],
        cwd=tmp_path, env=_clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=1):
                    break
            except OSError:
                assert server.poll() is None, server.communicate()[0]
                time.sleep(0.05)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_the_installed_wheel_serves_from_outside_the_repository(served: str, wheel_venv: Path, tmp_path: Path) -> None:
    where = subprocess.run(
        [str(wheel_venv / "bin" / "python"), "-c", "import halfmoon_server, halfmoon_web; "
         "print(halfmoon_server.__file__); print(halfmoon_web.STATIC_DIR)"],
        cwd=tmp_path, env=_clean_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert where.returncode == 0, where.stderr
    for line in where.stdout.split():
        assert line.startswith(str(wheel_venv)) and not line.startswith(str(ROOT)), line
    with urllib.request.urlopen(f"{served}/healthz", timeout=5) as health:
        assert health.status == 200
    with urllib.request.urlopen(f"{served}/", timeout=5) as page:
        assert b"<html" in page.read().lower()
    with urllib.request.urlopen(f"{served}/metrics", timeout=5) as metrics:
        assert b"halfmoon_rooms" in metrics.read()
    assert (tmp_path / "data" / "halfmoon.db").is_file()  # migrated from the wheel's own migrations


def test_the_operators_solver_comes_with_the_servers_install(wheel_venv: Path, tmp_path: Path) -> None:
    halfmoon = str(wheel_venv / "bin" / "halfmoon")
    usage = subprocess.run([halfmoon, "--help"], cwd=tmp_path, env=_clean_env(), capture_output=True, text=True)
    assert usage.returncode == 0 and "(operators)" in _commands(usage.stdout)["solve"], usage.stdout + usage.stderr
    solved = subprocess.run(
        [halfmoon, "solve", "HM1-N-AAAAAAB", "--json"], cwd=tmp_path, env=_clean_env(), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert solved.returncode == 0, solved.stderr
    assert '"result": "winnable"' in solved.stdout


def _commands(usage: str) -> dict[str, str]:
    """The subcommands ``halfmoon --help`` lists, each with its help line."""
    return {line.split()[0]: line for line in usage.splitlines() if line.startswith("    ") and line.split()}


def test_the_client_alone_needs_no_database_stack(dist: Path, tmp_path: Path) -> None:
    """A venv with only the wheel and its base requirements (websockets, orjson — taken from this
    interpreter): the terminal client, the engine and the operators' solver work, ``serve`` says
    what is missing — whatever arguments it is given."""
    home = tmp_path / "client-venv"
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(home)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(home / "bin" / "python"), "install", "-q", "--no-deps",
         str(_wheel(dist))],
        capture_output=True, text=True, timeout=300, env=_clean_env(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    base_only = tmp_path / "base"
    base_only.mkdir()
    import orjson
    import websockets

    for module in (websockets, orjson):
        source = Path(module.__file__ or "").parent
        (base_only / source.name).symlink_to(source)
    env = _clean_env(PYTHONPATH=str(base_only))
    halfmoon = str(home / "bin" / "halfmoon")
    usage = subprocess.run([halfmoon, "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert usage.returncode == 0, usage.stderr
    lines = _commands(usage.stdout)
    for command in ("race", "join", "watch", "bot", "play", "solve", "deal"):
        assert "unavailable" not in lines[command], lines[command]
    assert "unavailable" in lines["serve"]
    for module in ("aiohttp", "sqlalchemy", "alembic", "aiosqlite", "prometheus_client"):
        probe = subprocess.run([str(home / "bin" / "python"), "-c", f"import {module}"], env=env, capture_output=True)
        assert probe.returncode != 0, f"{module} is importable in the client-only venv"
    new = subprocess.run([halfmoon, "new"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert new.returncode == 0 and new.stdout.startswith("HM1-"), new.stderr
    for serve in (["serve"], ["serve", "--port", "1"]):
        refused = subprocess.run([halfmoon, *serve], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2 and SERVER_INSTALL in refused.stderr, refused.stderr
        assert "aiohttp" in refused.stderr and "usage:" not in refused.stderr


# -- the terminal-only install (client/pyproject.toml) ---------------------------------------------

#: What a player's install registers: the engine's commands and the terminal client's.
PLAYER_COMMANDS = {
    "bot", "deal", "history", "join", "link", "new", "play", "quick", "race", "replay", "verify", "watch"
}


@pytest.fixture(scope="module")
def player_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the terminal-only install, as the README gives it: ``python3 -m pip install
    ./client`` (pip builds it in place, so from a copy of the folders it reads, not to litter the
    tree; websockets and orjson from the package index)."""
    source = tmp_path_factory.mktemp("player-source")
    skip = shutil.ignore_patterns("__pycache__", "build", "*.egg-info")
    shutil.copytree(ROOT / "client" / "halfmoon_client", source / "client" / "halfmoon_client", ignore=skip)
    shutil.copy(ROOT / "client" / "pyproject.toml", source / "client" / "pyproject.toml")
    shutil.copytree(ROOT / "shared" / "halfmoon", source / "shared" / "halfmoon", ignore=skip)
    shutil.copy(ROOT / "LICENSE", source / "LICENSE")
    home = tmp_path_factory.mktemp("player-venv")
    venv.EnvBuilder(with_pip=False).create(home)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(home / "bin" / "python"), "install", "-q", "./client"],
        cwd=source, capture_output=True, text=True, timeout=600, env=_clean_env(),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return home


def _run_player(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(home / "bin" / "halfmoon"), *args], cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=60
    )


def test_the_terminal_only_install_holds_no_solver_and_no_server(player_venv: Path, tmp_path: Path) -> None:
    site = next(player_venv.glob("lib/python3*/site-packages"))
    installed = [path.relative_to(site) for path in site.rglob("*") if "__pycache__" not in path.parts]
    assert any(path.name == "racer.py" for path in installed) and any(path.name == "game.py" for path in installed)
    solver = [str(path) for path in installed if "solve" in path.name.lower()]
    assert solver == [], f"a solver in the player's install: {solver}"
    packages = {path.parts[0] for path in installed}
    assert not packages & {"halfmoon_server", "halfmoon_web", "aiohttp", "sqlalchemy"}, sorted(packages)
    for path in installed:  # nor does any module of the engine or the client reach for the server's
        if path.parts[0] in ("halfmoon", "halfmoon_client") and path.suffix == ".py":
            text = (site / path).read_text(encoding="utf-8")
            assert "import halfmoon_server" not in text and "from halfmoon_server" not in text, path
    probe = subprocess.run(
        [str(player_venv / "bin" / "python"), "-c", "import halfmoon_client.bots, halfmoon_client.strategy, "
         "halfmoon.cli.play; import halfmoon_server"],
        cwd=tmp_path, env=_clean_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert probe.returncode == 1 and "No module named 'halfmoon_server'" in probe.stderr, probe.stderr


def test_the_terminal_only_install_lists_no_solve_and_says_where_the_server_is(
    player_venv: Path, tmp_path: Path
) -> None:
    usage = _run_player(player_venv, tmp_path, "--help")
    assert usage.returncode == 0, usage.stderr
    assert set(_commands(usage.stdout)) == PLAYER_COMMANDS
    assert "solv" not in usage.stdout.lower()
    assert SERVER_INSTALL in " ".join(usage.stdout.split())  # the epilog, however argparse wraps it
    game = tmp_path / "game.json"
    game.write_text('{"code": "HM1-N-AAAAAAB", "moves": [["1", "8"]]}')
    for args in (["solve", "HM1-N-AAAAAAB"], ["solve", "--record", str(game)], ["solve"], ["serve", "--port", "1"],
                 ["serve"], ["serve", "--host", "0.0.0.0", "--no-winnable-daily"]):  # fmt: skip
        refused = _run_player(player_venv, tmp_path, *args)
        assert refused.returncode == 2, (args, refused.stdout, refused.stderr)
        assert refused.stdout == "" and "comes with the server" in refused.stderr, (args, refused.stderr)
        assert SERVER_INSTALL in refused.stderr and "Traceback" not in refused.stderr, (args, refused.stderr)
    new = _run_player(player_venv, tmp_path, "new")
    assert new.returncode == 0 and new.stdout.startswith("HM1-"), new.stderr
    deal = _run_player(player_venv, tmp_path, "deal", "HM1-N-AAAAAAB")
    assert deal.returncode == 0 and "R1" in deal.stdout, deal.stderr
    assert "winnab" not in deal.stdout.lower()


def test_the_terminal_only_install_keeps_to_the_projects_version_and_dependencies() -> None:
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    player = tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())["project"]
    assert player["version"] == root["version"]
    assert player["dependencies"] == root["dependencies"]
    assert player["scripts"] == root["scripts"]
    commands = player["entry-points"]["halfmoon.commands"]
    assert set(commands) == PLAYER_COMMANDS
    assert all(root["entry-points"]["halfmoon.commands"][name] == target for name, target in commands.items())
