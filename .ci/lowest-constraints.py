#!/usr/bin/env python3
"""Print pip constraints pinning every runtime dependency to its lowest allowed version.

Reads pyproject.toml: the base dependencies and the server, postgres and redis extras (the test
tools of the dev extra are not pinned). `.ci/run` installs these once, in a venv of their own,
and runs the suite there, so each lower bound in pyproject.toml is one the tests pass with.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

RUNTIME_EXTRAS = ("server", "postgres", "redis")


def lowest_pins(pyproject: Path) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in RUNTIME_EXTRAS:
        requirements += project["optional-dependencies"][extra]
    pins: dict[str, str] = {}
    for requirement in requirements:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[^]]*\])?\s*>=\s*([0-9][0-9A-Za-z.]*)(?:,.*)?", requirement)
        if match is None:
            if requirement.startswith("halfmoon["):
                continue  # an extra naming another extra
            raise SystemExit(f"{requirement!r} has no lower bound: give it one (>=)")
        pins[match.group(1).lower()] = match.group(2)
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    print("\n".join(lowest_pins(root / "pyproject.toml")))
