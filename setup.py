"""Half Moon's build: pure Python by default; with ``HALFMOON_COMPILE=1``, the compiled build.

    pip install .                                # pure Python: any machine, no compiler
    HALFMOON_COMPILE=1 pip install '.[server]'   # the compiled build (docs/server.md)

The compiled build compiles the modules a move runs through (pyproject.toml's
``[tool.halfmoon.compiled] modules``: the engine, the race and room core, the rooms, a frame's path
and the journal) to C with mypyc, and puts each extension beside its ``.py`` in the wheel; Python
imports the extension. It needs a C compiler and Python's headers, and takes a few minutes; pip
fetches mypy and the server's own packages (whose types mypyc compiles against) for the build.
Everything else about the package — its metadata, its packages, its commands — is in
pyproject.toml. ``halfmoon serve`` says at start-up which build runs, and ``/metrics`` has it as
``halfmoon_build_info``.

An editable install (``pip install -e``) is always pure Python: a compiled module would not follow
its source as it is edited, so ``HALFMOON_COMPILE=1`` refuses it.
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path
from typing import Any

from setuptools import setup

HERE = Path(__file__).resolve().parent
#: the mypy (which carries mypyc) the modules are known to compile with: the dev extra's
MYPY = "mypy==2.4.1"
#: ``setup.py`` commands that make an editable install
EDITABLE = {"editable_wheel", "develop"}
#: ``setup.py`` commands that build the extensions
BUILDS = {"bdist_wheel", "build", "build_ext", "install"}


def compiling(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Whether ``HALFMOON_COMPILE`` asks for the compiled build: ``1``; ``0`` or unset: pure Python."""
    value = environ.get("HALFMOON_COMPILE", "0").strip()
    if value not in {"", "0", "1"}:
        raise SystemExit(f"HALFMOON_COMPILE is 1 (the compiled build) or 0 (pure Python), not {value!r}")
    return value == "1"


def project() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))
    return config


def compiled_modules() -> list[str]:
    """The files compiled (paths from the project's folder)."""
    modules: list[str] = project()["tool"]["halfmoon"]["compiled"]["modules"]
    return modules


def build_requirements() -> list[str]:
    """What the compiled build needs installed to build: mypy, and every package the server imports
    (its database and Redis drivers too), so that mypyc compiles against their types (mypy refuses
    an import it cannot find)."""
    config = project()["project"]
    extras = config["optional-dependencies"]
    imported = [spec for extra in ("server", "postgres", "redis") for spec in extras[extra]]
    return [MYPY, *config["dependencies"], *(spec for spec in imported if not spec.startswith("halfmoon"))]


def extensions() -> list[Any]:
    """mypyc's extensions of :func:`compiled_modules` when a command builds them; none while pip
    asks what the build needs (mypy is not installed yet: :func:`build_requirements` says it is) or
    for the package's metadata (which they are no part of; mypyc would run twice)."""
    if not BUILDS & set(sys.argv):
        return []
    from mypyc.build import mypycify

    # (mypy's own checks are the tests' job: a `type: ignore` that a newer release of a dependency
    # made unnecessary must not stop an operator's build)
    return list(mypycify([*compiled_modules(), "--no-warn-unused-ignores"], opt_level="3", multi_file=True))


def main() -> None:
    if not compiling():
        setup()
        return
    if EDITABLE & set(sys.argv):
        raise SystemExit(
            "HALFMOON_COMPILE=1 builds a wheel: an editable install stays pure Python "
            "(a compiled module would not follow its source); install without -e, or without HALFMOON_COMPILE"
        )
    # (setup_requires is how a setup.py tells pip, through setuptools' build backend, what else its
    # build needs; pip installs it into the build's environment, then builds)
    jobs = os.cpu_count() or 1
    setup(
        ext_modules=extensions(),
        setup_requires=build_requirements(),
        options={"build_ext": {"parallel": jobs}},
    )


if __name__ == "__main__":
    main()
