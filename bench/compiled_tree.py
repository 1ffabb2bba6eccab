"""A copy of a source tree with Half Moon's hot layers compiled to C by mypyc, beside their Python,
for ``load.py`` to run: what compiling its own interpreted Python per move would buy (issue 31).

    python bench/compiled_tree.py OUT [--from REV] [-j 2]
    python bench/load.py --only closed-1k open-10k-5k --compare OUT   # OUT is "before": after/before
                                                                      # is interpreted ÷ compiled
    cd OUT && python bench/load.py --peers                             # the compiled server beside the peers

The copy holds ``shared``, ``server``, ``client`` and ``bench`` of the working tree (or of git
revision REV: 3511135 or later, the first whose modules mypyc compiles), and one extension module
beside each compiled ``.py``: Python's import system takes the extension first, so a server run
with the copy's ``shared`` and ``server`` on ``PYTHONPATH`` (as ``--compare DIR`` does) runs the
compiled code. It is a measurement, not a build of the package: nothing installs it, and a compiled
module is not kept in step with its source. The package's own compiled build is setup.py's
(``HALFMOON_COMPILE=1 pip install .``), of the same modules; ``.ci/compiled`` tests it.

:data:`MODULES` are the engine, the race and room core, the rooms, a frame's path and the journal;
:data:`LEFT_INTERPRETED` says why a module a move also runs through is not compiled (the rest of
those packages — the command lines, ``diagram``, the other adapters and web handlers — is not on a
move's path). mypy (which carries mypyc), setuptools, a C compiler and Python's headers are
needed; the compile takes minutes (``-j``: C files compiled at once). A copy whose compile fails is
removed.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PARTS = ("shared", "server", "client", "bench")

#: the compiled build's modules, as paths in the tree (pyproject.toml's ``[tool.halfmoon.compiled]``, which
#: setup.py compiles with ``HALFMOON_COMPILE=1``): the modules a move runs through
_COMPILED = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["halfmoon"]["compiled"]
MODULES: tuple[str, ...] = tuple(_COMPILED["modules"])

#: in the compiled layers but left interpreted, and why (mypyc 2.4's limits, measured on this tree)
LEFT_INTERPRETED: dict[str, str] = dict(_COMPILED["left-interpreted"])


def copy_tree(into: Path, revision: str | None) -> None:
    """``shared``, ``server``, ``client`` and ``bench`` of the working tree (or of ``revision``), into
    ``into``; the load benchmark's Node.js packages are linked, not copied (``--peers``)."""
    if revision is not None:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, *PARTS], check=True, capture_output=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            if hasattr(tarfile, "data_filter"):  # (Python 3.11.4 on; the archive is git's own)
                tar.extractall(into, filter="data")
            else:
                tar.extractall(into)
    else:
        skip = shutil.ignore_patterns("__pycache__", "*.so", "node_modules", ".mypy_cache", "build")
        for part in PARTS:
            shutil.copytree(ROOT / part, into / part, ignore=skip)
    node_modules = ROOT / "bench" / "peers" / "node_modules"
    if node_modules.is_dir() and (into / "bench" / "peers").is_dir():
        (into / "bench" / "peers" / "node_modules").symlink_to(node_modules)


#: run in the copy: mypyc's setuptools build of the modules given, into ``build/lib``
BUILD = """
import sys
from setuptools import setup
from mypyc.build import mypycify
jobs, paths = sys.argv[1], sys.argv[2:]
setup(
    name="halfmoon-compiled-bench",
    # a C file a module, compiled --parallel (3.6 min for MODULES on 2 cores, not 5.7); mypyc 2.4
    # names one module's header wrongly that way, so one module alone is one file
    ext_modules=mypycify(paths, opt_level="3", multi_file=len(paths) > 1),
    script_args=["-q", "build_ext", "--build-lib", "build/lib", "--build-temp", "build/temp", "--parallel", jobs],
)
"""


def compile_modules(tree: Path, modules: tuple[str, ...], jobs: int) -> list[Path]:
    """Compile ``modules`` (paths in ``tree``) as one mypyc group and put each extension beside its
    source (the group's shared library in ``tree/shared``, first on the path). Returns the
    extensions placed. Raises CalledProcessError with mypyc's or the compiler's output."""
    env = {**os.environ, "MYPYPATH": os.pathsep.join(str(tree / part) for part in ("shared", "server", "client"))}
    done = subprocess.run(
        [sys.executable, "-c", BUILD, str(jobs), *modules],
        cwd=tree, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, "mypyc", done.stdout, done.stderr)
    return place_extensions(tree)


def place_extensions(tree: Path) -> list[Path]:
    """Move each extension of ``tree/build/lib`` beside its source (a group's library, imported by
    its top-level name, into ``tree/shared``, first on the path), remove ``build``, and return the
    extensions placed."""
    lib = tree / "build" / "lib"
    placed = []
    for built in sorted(lib.rglob("*.so")):
        relative = built.relative_to(lib)
        if len(relative.parts) == 1:
            target = tree / "shared" / relative
        else:
            target = tree / ("shared" if relative.parts[0] == "halfmoon" else "server") / relative
        shutil.copy2(built, target)
        placed.append(target)
    shutil.rmtree(tree / "build")
    return placed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], prog="compiled_tree.py")
    parser.add_argument("out", type=Path, help="a folder to create (it must not exist)")
    parser.add_argument("--from", dest="revision", metavar="REV", help="a git revision, not the working tree")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="C files compiled at once")
    args = parser.parse_args(argv)
    if args.out.exists():
        parser.error(f"{args.out} exists: give a new folder")
    args.out.mkdir(parents=True)
    started = time.monotonic()
    try:
        copy_tree(args.out, args.revision)
        placed = compile_modules(args.out, MODULES, args.jobs)
    except subprocess.CalledProcessError as failed:
        shutil.rmtree(args.out)
        output = f"{failed.stdout or ''}{failed.stderr or ''}".strip().splitlines()
        print("\n".join(line for line in output if "error" in line.lower()) or "\n".join(output[-20:]))
        print(f"compiled_tree.py: {failed.cmd} failed ({failed.returncode}); {args.out} removed", file=sys.stderr)
        return 1
    print(f"compiled {len(MODULES)} modules into {len(placed)} extensions in {time.monotonic() - started:.0f} s")
    for path, why in LEFT_INTERPRETED.items():
        print(f"left interpreted: {path}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
