"""What one candidate code costs an attacker: ``python bench/code_search.py [--runs 5] [--json OUT]``.

Builds ``bench/code_search.c`` with the machine's gcc (with OpenSSL's SHA-256 when its headers
are there, with the SHA extensions when the CPU has them), checks every SHA-256 back end against
the others and each search against the engine (it must find a short code and a long code from
their 8 reserve cards, in a window around them), then times the search over the short space
(7 letters) and the long one (28 letters): candidates per CPU-second, the median of ``--runs``
runs. It ends with the threat-model table of docs/security.md: for each kind of code, its bits and
the expected time to search half its space at this rate and at 10^12 candidates a second.
Figures go in docs/benchmarks.md ("Searching a code from its opening reserve").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from halfmoon.codes import CODE_SPACE, LONG_CODE_SPACE, DealCode
from halfmoon.deal import Deal

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "code_search.c"
ATTACKER_RATE = 1e12  # candidates a second: a large GPU farm, the yardstick
YEAR = 365.25 * 24 * 3600

#: (name, bits of secrecy, space searched, length): the kinds of code docs/security.md weighs
KINDS = [
    ("short N: typed, shared, open races, solo", 0.0, CODE_SPACE, 7),
    ("short D: the daily before long codes (legacy)", math.log2(CODE_SPACE), CODE_SPACE, 7),
    ("short S or N drawn by the server for a sealed race (legacy)", math.log2(CODE_SPACE), CODE_SPACE, 7),
    ("long D: the daily (HMAC of the day, mod 26^28)", math.log2(LONG_CODE_SPACE), LONG_CODE_SPACE, 28),
    ("long S: a sealed race (seed + contributions, mod 26^28)", math.log2(LONG_CODE_SPACE), LONG_CODE_SPACE, 28),
]


def build(workdir: Path) -> tuple[Path, list[str]]:
    """Compile the search; returns the binary and the back ends it has."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        raise SystemExit("no C compiler (gcc or cc) on this machine")
    flags = ["-O3", "-march=native", "-Wall", "-Wextra"]
    libs: list[str] = []
    backends = ["portable"]
    if Path("/usr/include/openssl/sha.h").exists():
        flags.append("-DHAVE_OPENSSL")
        libs.append("-lcrypto")
        backends.append("openssl")
    if "sha_ni" in Path("/proc/cpuinfo").read_text(errors="replace").split():
        flags.append("-DHAVE_SHANI")
        backends.append("shani")
    binary = workdir / "code_search"
    subprocess.run([gcc, *flags, "-o", str(binary), str(SOURCE), *libs], check=True)
    return binary, backends


def run(binary: Path, *args: str) -> str:
    return subprocess.run([str(binary), *args], check=True, capture_output=True, text=True).stdout


def reserve_of(code: DealCode) -> list[str]:
    return [card.name for card in Deal.from_code(code).reserve]


def check_search(binary: Path, backend: str, code: DealCode, window: int = 20_000) -> None:
    """The search must find ``code`` (and nothing else) in a window of ``window`` numbers around it."""
    start = max(0, code.number - window // 2)
    first = DealCode(code.kind, start, long=code.long)
    found = run(binary, "search", backend, code.kind, first.letters, str(window), *reserve_of(code)).split()
    if found != [str(code)]:
        raise SystemExit(f"{backend}: the search over {window} codes from {first} found {found}, not {code}")


def measure(binary: Path, backend: str, length: int, count: int, runs: int) -> dict[str, Any]:
    """Candidates per CPU-second over ``count`` candidates that do not deal the target reserve."""
    target = reserve_of(DealCode.parse("HM1-N-AAAAAAB"))
    body = "Q" * length  # a window far from AAAAAAB (and, long, another length altogether)
    rates = []
    for _ in range(runs):
        result = json.loads(run(binary, "bench", backend, "N", body, str(count), *target))
        rates.append(result["candidates"] / result["cpu_seconds"])
    median = statistics.median(rates)
    return {"backend": backend, "length": length, "candidates": count, "runs": rates, "median": median}


def human(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.3g} ms"
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.3g} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.3g} h"
    if seconds < YEAR:
        return f"{seconds / 86400:.3g} days"
    return f"{seconds / YEAR:.2g} years"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per back end and length (median)")
    parser.add_argument("--count", type=int, default=3_000_000, help="candidates per timed run (fast back ends)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        binary, backends = build(Path(tmp))
        print(run(binary, "selftest").strip(), "— the SHA-256 back ends agree:", ", ".join(backends))
        for backend in backends:
            check_search(binary, backend, DealCode.parse("HM1-S-QWERTYU"))
            check_search(binary, backend, DealCode.parse("HM1-S-ABCDEFG-HIJKLMN-OPQRSTU-VWXYZAB"))
        print("each back end finds a short and a long code from its reserve in a 20,000-code window")
        figures = []
        for backend in backends:
            count = args.count if backend != "portable" else args.count // 3
            for length in (7, 28):
                figure = measure(binary, backend, length, count, args.runs)
                figures.append(figure)
                runs = ", ".join(f"{rate / 1e6:.2f}" for rate in figure["runs"])
                median = figure["median"] / 1e6
                print(f"{backend:9} {length:2} letters: {median:6.2f} M candidates/CPU-s (runs: {runs})")
    best = max(figures, key=lambda f: float(f["median"]))
    rate = min(float(f["median"]) for f in figures if f["backend"] == best["backend"])
    print(f"\nfastest: {best['backend']}, {rate / 1e6:.2f} M candidates per core-second ({1e9 / rate:.0f} ns each)")
    cpu = platform.processor() or platform.machine()
    print(f"machine: {cpu}, {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    table = []
    print("\n| code | bits | half the space at 10^12/s | at this machine's rate, one core |")
    print("|---|---|---|---|")
    for name, bits, space, _length in KINDS:
        half = space / 2
        row = {"kind": name, "bits": bits, "space": space, "at_1e12": half / ATTACKER_RATE, "one_core": half / rate}
        table.append(row)
        at_1e12 = "known: no search" if bits == 0 else human(half / ATTACKER_RATE)
        one_core = "known: no search" if bits == 0 else human(half / rate)
        print(f"| {name} | {bits:.1f} | {at_1e12} | {one_core} |")
    if args.json:
        document = {"machine": platform.platform(), "cpus": os.cpu_count(), "figures": figures, "table": table}
        args.json.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
