"""Names that look alike are the same name: the key a nickname is compared by, in a room, on a
leaderboard and for the daily challenge's one ranked attempt.

``name_key(name)`` is the name's *skeleton* (Unicode TR39 §4) taken case-insensitively: NFKC and
case folding first (``Ian`` is ``ian``), then every character replaced by the representative of
the characters it can be confused with, then case folded again. (Folding first means look-alikes
that exist only in one case — capital ``I`` and small ``l`` — are not joined: names that differ in
case alone must be one name, and that matters more.) ``Ada``, ``ADA``, Cyrillic
``Аda``, fullwidth ``Ａｄａ`` and mathematical bold ``𝐀𝐝𝐚`` all have
the key ``ada``. The confusable pairs are Unicode's ``confusables.txt`` as the maintained
``confusable-homoglyphs`` package ships it; the representative of each set of look-alikes is
its ASCII member if it has one (else its shortest, then smallest).

>>> name_key("Ada") == name_key("Аda") == name_key("Ａｄａ") == name_key("𝐀𝐝𝐚") == "ada"
True
>>> name_key("Ian") == name_key("ian") and name_key("Otto") == name_key("OTTO") != name_key("Orro")
True
>>> name_key("Ada") == name_key("Eva")
False
"""

from __future__ import annotations

import json
import unicodedata
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def _representatives() -> dict[str, str]:
    """Each confusable character → the representative of its set of look-alikes."""
    data: dict[str, list[dict[str, str]]] = json.loads(
        resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text(encoding="utf-8")
    )
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(x: str, y: str) -> None:
        a, b = find(x), find(y)
        if a != b:
            parent[a] = b

    for key, glyphs in data.items():
        for glyph in glyphs:
            union(key, glyph["c"].strip("\u200e\u200f"))

    members: dict[str, list[str]] = {}
    for x in list(parent):
        members.setdefault(find(x), []).append(x)
    best = {root: min(group, key=lambda m: (not m.isascii(), len(m), m)) for root, group in members.items()}
    return {x: best[find(x)] for x in parent if len(x) == 1 and best[find(x)] != x}


def _skeleton(text: str) -> str:
    table = _representatives()
    return unicodedata.normalize("NFC", "".join(table.get(ch, ch) for ch in unicodedata.normalize("NFD", text)))


def name_key(name: str) -> str:
    """The skeleton a nickname is compared by (see the module docstring)."""
    folded = unicodedata.normalize("NFKC", name.strip()).casefold()  # case first: Ian is ian
    return unicodedata.normalize("NFKC", _skeleton(folded)).casefold()
