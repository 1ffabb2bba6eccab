"""setup.py: the package is pure Python unless ``HALFMOON_COMPILE=1`` asks for the compiled build;
what that build compiles and what it needs to build. (.ci/compiled builds it for real and runs the
engine's, the core's, the rooms', the web layer's and the adapters' tests against it; the default
wheel's purity is tests/test_packaging.py's.)"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tomllib
from types import ModuleType

import pytest

from tests.conftest import ROOT


def load_setup() -> ModuleType:
    """setup.py as a module (its ``main`` runs only as ``__main__``, as setuptools runs it)."""
    spec = importlib.util.spec_from_file_location("halfmoon_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


setup = load_setup()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def run_setup(*args: str, compile_: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HALFMOON_COMPILE": compile_}
    return subprocess.run(
        [sys.executable, "setup.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(("value", "wanted"), [(None, False), ("", False), ("0", False), ("1", True), (" 1 ", True)])
def test_only_halfmoon_compile_1_asks_for_the_compiled_build(value: str | None, wanted: bool) -> None:
    environ = {} if value is None else {"HALFMOON_COMPILE": value}
    assert setup.compiling(environ) is wanted


@pytest.mark.parametrize("value", ["yes", "true", "2", "on"])
def test_any_other_halfmoon_compile_is_refused_saying_what_it_takes(value: str) -> None:
    with pytest.raises(SystemExit, match=f"HALFMOON_COMPILE is 1 .* or 0 .*, not '{value}'"):
        setup.compiling({"HALFMOON_COMPILE": value})


def test_the_compiled_modules_are_files_of_the_engine_and_the_server() -> None:
    modules = setup.compiled_modules()
    assert modules == PYPROJECT["tool"]["halfmoon"]["compiled"]["modules"]
    assert len(modules) == len(set(modules)) >= 30
    for path in modules:
        assert (ROOT / path).is_file(), path
        assert path.endswith(".py") and path.split("/")[0] in {"shared", "server"}, path
    for path in PYPROJECT["tool"]["halfmoon"]["compiled"]["left-interpreted"]:
        assert (ROOT / path).is_file() and path not in modules, path


def test_the_build_needs_the_dev_extras_mypy_and_every_package_the_server_imports() -> None:
    needed = setup.build_requirements()
    project = PYPROJECT["project"]
    assert setup.MYPY in project["optional-dependencies"]["dev"], "the mypy the tests type-check with"
    assert needed[0] == setup.MYPY
    for extra in ("server", "postgres", "redis"):
        for spec in project["optional-dependencies"][extra]:
            assert spec in needed or spec.startswith("halfmoon"), spec
    assert all(spec in needed for spec in project["dependencies"])
    assert not any(spec.startswith("halfmoon") for spec in needed)


@pytest.mark.parametrize("command", ["egg_info", "dist_info", "sdist", "--version"])
def test_commands_that_build_no_extension_never_run_mypyc(monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    monkeypatch.setattr(sys, "argv", ["setup.py", command])
    assert setup.extensions() == []


@pytest.mark.parametrize("command", ["develop", "editable_wheel"])
def test_an_editable_install_is_refused_the_compiled_build(command: str) -> None:
    done = run_setup(command, compile_="1")
    assert done.returncode != 0
    assert "an editable install stays pure Python" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_mistyped_halfmoon_compile_stops_the_build_with_its_message() -> None:
    done = run_setup("--version", compile_="yes")
    assert done.returncode != 0 and "HALFMOON_COMPILE is 1 (the compiled build) or 0" in done.stderr
    assert "Traceback" not in done.stderr
