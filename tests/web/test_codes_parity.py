"""The browser's code parser (client/halfmoon_web/static/js/codes.js) and the engine's agree on
thousands of random inputs — the canonical code, or the very words of the refusal — beyond the
golden vectors' hand-picked cases; and on the sealed code of random seeds and contributions."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest

from halfmoon.codes import DealCode, sealed_code
from halfmoon.errors import InvalidCodeError
from tests.conftest import ROOT

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

SCRIPT = """
import { readFileSync } from "node:fs";
import { parseCode, sealedCode } from "%s";
const { codes, seals } = JSON.parse(readFileSync(0, "utf8"));
const parsed = codes.map((text) => {
  try { return { canonical: parseCode(text).canonical }; } catch (error) { return { error: error.message }; }
});
const sealed = [];
for (const [seed, contributions] of seals) sealed.push((await sealedCode(seed, contributions)).canonical);
process.stdout.write(JSON.stringify({ parsed, sealed }));
"""

PIECES = ["HM1", "HM2", "hm1", "HM", "-", "-", "-", "N", "D", "S", "X", "s", "ABCDEFG", "QWERTYU", "zzzzzzz"]
PIECES += ["A", "AB", "ABCDEFGHIJKLMNOPQRSTUVWXYZAB", "1", " ", "\t", "\n", "É", "ı", "'", '"', "\\", "\x1f", "--"]


def random_input(rng: random.Random) -> str:
    if rng.random() < 0.3:  # a well-formed code, then maybe one change
        long = rng.random() < 0.5
        code = str(DealCode(rng.choice("NDS"), rng.randrange(26 ** (28 if long else 7)), long=long))
        if rng.random() < 0.5:
            code = code.lower() if rng.random() < 0.5 else code.replace("-", "", rng.randrange(1, 6))
        if rng.random() < 0.5:
            at = rng.randrange(len(code) + 1)
            code = code[:at] + rng.choice(PIECES) + code[at + rng.randrange(2) :]
        return rng.choice(["", " ", "\t"]) + code + rng.choice(["", " ", "\n"])
    return "".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 9)))


def python_parse(text: str) -> dict[str, str]:
    try:
        return {"canonical": str(DealCode.parse(text))}
    except InvalidCodeError as error:
        return {"error": str(error)}


def test_the_browser_and_the_engine_parse_and_refuse_alike() -> None:
    rng = random.Random(28)
    codes = [random_input(rng) for _ in range(3000)]
    seals = [
        (
            rng.randbytes(32).hex(),
            [rng.randbytes(rng.randrange(16, 33)).hex() for _ in range(rng.randrange(4))],
        )
        for _ in range(200)
    ]
    module = (ROOT / "client" / "halfmoon_web" / "static" / "js" / "codes.js").as_uri()
    assert NODE is not None
    result = subprocess.run(
        [NODE, "--input-type=module", "-e", SCRIPT % module],
        input=json.dumps({"codes": codes, "seals": seals}),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answers = json.loads(result.stdout)
    accepted = 0
    for text, theirs in zip(codes, answers["parsed"], strict=True):
        ours = python_parse(text)
        assert theirs == ours, text
        accepted += "canonical" in ours
    assert 200 < accepted < 2800, "the inputs mix accepted and refused codes"
    for (seed, contributions), theirs in zip(seals, answers["sealed"], strict=True):
        assert theirs == str(sealed_code(seed, contributions))
