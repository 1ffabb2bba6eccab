"""``halfmoon serve`` from the source tree on ``PYTHONPATH``, whatever the installed package's entry
points name: ``load.py --compare REV`` runs a revision whose server module lived elsewhere
(``halfmoon_server.cli`` before the package's layers, ``halfmoon_server.ops.cli`` since), and the
entry point of the install would load this tree's module into that one's package.

    PYTHONPATH=TREE/shared:TREE/server:TREE/client python bench/serve_tree.py --port 8080 …
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType


def server_cli() -> ModuleType:
    """The tree's ``serve`` command module, chosen by the files of the ``halfmoon_server`` package
    found first (an editable install's import hook would otherwise find the newer layout's
    modules in the installed tree). Raises ModuleNotFoundError when the tree has neither."""
    package = Path(importlib.import_module("halfmoon_server").__path__[0])
    for relative, name in (("ops/cli.py", "halfmoon_server.ops.cli"), ("cli.py", "halfmoon_server.cli")):
        if (package / relative).is_file():
            return importlib.import_module(name)
    raise ModuleNotFoundError(f"no serve command in {package}", name="halfmoon_server.cli")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="halfmoon")
    server_cli().register_serve(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["serve", *argv])
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
