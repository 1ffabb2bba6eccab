"""halfmoon.compiled: which build runs, read from what Python imported."""

from __future__ import annotations

import json

import orjson

import halfmoon.game
from halfmoon import compiled as compiled_module
from halfmoon.compiled import compiled, is_extension


def test_a_module_from_a_py_file_is_not_an_extension() -> None:
    assert not is_extension(json)


def test_a_module_from_a_c_extension_is_one() -> None:
    assert orjson.__file__ is not None and is_extension(orjson.orjson)  # (orjson's compiled core)


def test_the_build_is_the_one_the_engines_rules_were_imported_from() -> None:
    assert compiled() is is_extension(halfmoon.game)
    assert compiled() is (not str(halfmoon.game.__file__).endswith(".py"))


def test_a_module_without_a_file_is_not_an_extension() -> None:
    assert not is_extension(compiled_module.__class__("made_here"))
