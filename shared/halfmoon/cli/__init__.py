"""The ``halfmoon`` command. Each subcommand registers itself through the ``halfmoon.commands``
entry-point group, so the engine's commands (``deal``, ``replay``, ``new``, ``play``, ``solve``)
live here while ``serve`` comes from the server package and ``join``/``watch``/``race``/``bot``
from the client package — and the engine imports neither.

An entry point names a function ``register(subparsers)`` that adds its parser and sets
``func`` (taking the parsed arguments, returning the exit status) as a default.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

from halfmoon import __version__

ENTRY_POINT_GROUP = "halfmoon.commands"


def positive_int(text: str) -> int:
    """An argparse type for the subcommands: a whole number of at least 1, or a clear error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``halfmoon`` parser. With ``command`` (a subcommand's name), only that subcommand's
    entry point is loaded: ``halfmoon deal`` need not import the server to start."""
    parser = argparse.ArgumentParser(
        prog="halfmoon",
        description="Half Moon: the two-deck solitaire of the Elevens family, solo and in races.",
    )
    parser.add_argument("--version", action="version", version=f"halfmoon {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    entries = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
    if any(entry.name == command for entry in entries):
        entries = [entry for entry in entries if entry.name == command]
    for entry in entries:
        try:
            register = entry.load()
        except ImportError as exc:  # a part of the project that is not installed here
            _register_unavailable(sub, entry.name, exc)
        else:
            register(sub)
    return parser


def _register_unavailable(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, exc: Exception) -> None:
    p = sub.add_parser(name, help=f"(unavailable: {exc})", add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)

    def unavailable(args: argparse.Namespace) -> int:
        print(f"halfmoon {name}: unavailable in this installation ({exc})", file=sys.stderr)
        return 2

    p.set_defaults(func=unavailable)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    command = next((arg for arg in arguments if not arg.startswith("-")), None)
    parser = build_parser(command)
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
