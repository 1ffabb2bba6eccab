"""The browser's protocol constants are the shared module's: the version net.js puts on every
frame, and the statuses session.js counts as a finished game (read from the JS source text, since
the browser cannot import Python)."""

from __future__ import annotations

import re

from halfmoon import protocol
from halfmoon_web import STATIC_DIR

JS = STATIC_DIR / "js"


def _source(name: str) -> str:
    return (JS / name).read_text(encoding="utf-8")


def test_the_browser_speaks_the_protocol_version_of_halfmoon_protocol() -> None:
    found = re.findall(r"^export const PROTOCOL_VERSION = (\d+);$", _source("net.js"), re.MULTILINE)
    assert found == [str(protocol.VERSION)]


def test_the_browser_finishes_a_game_on_the_statuses_of_halfmoon_protocol() -> None:
    found = re.findall(r"^const FINISHED = new Set\(\[([^\]]*)\]\);$", _source("session.js"), re.MULTILINE)
    assert len(found) == 1, "session.js defines FINISHED once, as a Set of string literals"
    names = re.findall(r'"([a-z_]+)"', found[0])
    assert len(names) == len(set(names)) and set(names) == {str(s) for s in protocol.FINISHED}


def test_no_other_module_keeps_its_own_list_of_finished_statuses() -> None:
    for path in sorted(JS.glob("*.js")):
        if path.name in {"session.js", "i18n.js"}:  # i18n.js words every status, finished or not
            continue
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"""["'](gave_up|timed_out)["']""", text), f"{path.name} names a finished status"
