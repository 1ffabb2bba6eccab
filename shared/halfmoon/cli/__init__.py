"""The ``halfmoon`` command. Each subcommand registers itself through the ``halfmoon.commands``
entry-point group, so the engine's commands (``deal``, ``replay``, ``new``, ``play``) live here
while ``join``/``watch``/``race``/``bot`` come from the client package, and ``serve`` and the
operators' ``solve`` from the server package — and the engine imports neither.

A player's terminal-only install (``client/pyproject.toml``) registers no server command: there,
``halfmoon serve`` and ``halfmoon solve`` say that they come with the server, a separate install
(:data:`SERVER_COMMANDS`), whatever arguments follow, and ``halfmoon --help`` lists neither.

An entry point names a function ``register(subparsers)`` that adds its parser and sets
``func`` (taking the parsed arguments, returning the exit status) as a default.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TypeAlias

from halfmoon import __version__

ENTRY_POINT_GROUP = "halfmoon.commands"
#: The commands the server's install registers: where they are missing, they are not mistyped.
SERVER_COMMANDS = frozenset({"serve", "solve", "ratings"})
#: What to install for them (the project is installed from its source tree: README.md).
SERVER_INSTALL = "python3 -m pip install '.[server]' in the Half Moon source tree (docs/server.md)"


def positive_int(text: str) -> int:
    """An argparse type for the subcommands: a whole number of at least 1, or a clear error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


#: A subcommand's entry point: adds its parser to the ``halfmoon`` parser's subparsers.
Register: TypeAlias = "Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]"


@dataclass(frozen=True)
class Commands:
    """The subcommands this installation registers: those that load, and why the others do not."""

    loaded: dict[str, Register]
    unavailable: dict[str, str]
    server_installed: bool


def load_commands(command: str | None = None) -> Commands:
    """Load the ``halfmoon.commands`` entry points; with ``command`` (a subcommand's name) only
    that one, when it is registered: ``halfmoon deal`` need not import the server to start."""
    entries = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
    server_installed = any(entry.name == "serve" for entry in entries)
    if any(entry.name == command for entry in entries):
        entries = [entry for entry in entries if entry.name == command]
    loaded: dict[str, Register] = {}
    unavailable: dict[str, str] = {}
    for entry in entries:
        try:
            loaded[entry.name] = entry.load()
        except ImportError as exc:  # a part of the project that is not installed here
            if entry.module.split(".")[0] == "halfmoon_server":
                why = f"it comes with the server, which needs its own install ({exc}): {SERVER_INSTALL}"
            else:
                why = f"this installation lacks a part of it ({exc})"
            unavailable[entry.name] = why
    return Commands(loaded, unavailable, server_installed)


def build_parser(command: str | None = None, commands: Commands | None = None) -> argparse.ArgumentParser:
    """The ``halfmoon`` parser, with the subcommands of ``commands`` (default: :func:`load_commands`)."""
    commands = load_commands(command) if commands is None else commands
    parser = argparse.ArgumentParser(
        prog="halfmoon",
        description="Half Moon: the two-deck solitaire of the Elevens family, solo and in races.",
        epilog=None if commands.server_installed else f"The server is a separate install: {SERVER_INSTALL}.",
    )
    parser.add_argument("--version", action="version", version=f"halfmoon {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in sorted({*commands.loaded, *commands.unavailable}):
        if name in commands.loaded:
            commands.loaded[name](sub)
        else:
            sub.add_parser(name, help=f"(unavailable: {commands.unavailable[name]})", add_help=False)
    return parser


def _refuse(name: str, why: str) -> int:
    print(f"halfmoon {name}: not available here: {why}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    command = next((arg for arg in arguments if not arg.startswith("-")), None)
    commands = load_commands(command)
    # refused before parsing, so that no argument (``serve --port 1``) turns it into a usage error
    if command in commands.unavailable:
        return _refuse(command, commands.unavailable[command])
    if command in SERVER_COMMANDS and command not in commands.loaded:
        return _refuse(command, f"it comes with the server, a separate install: {SERVER_INSTALL}")
    parser = build_parser(command, commands)
    args = parser.parse_args(arguments)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        status: int = args.func(args)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
