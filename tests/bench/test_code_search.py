"""The reserve-to-code search in C (bench/code_search.c) finds what it should and nothing else, on
every SHA-256 back end this machine has (no timing asserts: the figures are measured by hand,
docs/benchmarks.md)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from halfmoon.codes import DealCode, sealed_code
from halfmoon.deal import Deal
from tests.conftest import ROOT

if shutil.which("gcc") is None and shutil.which("cc") is None:
    pytest.skip("no C compiler", allow_module_level=True)


def _load() -> ModuleType:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import code_search
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return code_search


code_search = _load()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    return code_search.build(tmp_path_factory.mktemp("code_search"))


def search(binary: Path, backend: str, first: DealCode, count: int, reserve: list[str]) -> list[str]:
    return code_search.run(binary, "search", backend, first.kind, first.letters, str(count), *reserve).split()


def test_the_back_ends_agree_on_sha256(built: tuple[Path, list[str]]) -> None:
    binary, backends = built
    assert "portable" in backends
    assert code_search.run(binary, "selftest").strip() == "ok"


def test_each_back_end_recovers_a_short_code_and_not_a_long_one(built: tuple[Path, list[str]]) -> None:
    binary, backends = built
    short = DealCode.parse("HM1-N-QWERTYU")
    secret = sealed_code("5eed" * 16, ["a1" * 16])
    for backend in backends:
        reserve = [card.name for card in Deal.from_code(short).reserve]
        assert search(binary, backend, DealCode("N", short.number - 3_000), 5_000, reserve) == [str(short)]
        reserve = [card.name for card in Deal.from_code(secret).reserve]
        assert search(binary, backend, DealCode("S", secret.number % 26**7), 5_000, reserve) == []
        assert search(binary, backend, DealCode("S", 0, long=True), 5_000, reserve) == []
        window = DealCode("S", secret.number - 2_000, long=True)
        assert search(binary, backend, window, 5_000, reserve) == [str(secret)]


def test_the_bench_reports_candidates_and_cpu_time(built: tuple[Path, list[str]]) -> None:
    binary, _ = built
    figure = code_search.measure(binary, "portable", 28, 2_000, runs=1)
    assert figure["length"] == 28 and figure["candidates"] == 2_000 and figure["median"] > 0
