"""tests/vectors/sessions.json is what the server sends today: the recording is made again and
compared page by page, so the sessions both clients are tested on cannot drift from the server."""

from __future__ import annotations

import json

from tests.server.build_session_vectors import PATH, build, dumps


async def test_the_recorded_sessions_are_what_the_server_sends_today() -> None:
    committed = json.loads(PATH.read_text(encoding="utf-8"))
    recorded = await build()
    assert recorded["format"] == committed["format"]
    assert list(recorded["scenarios"]) == list(committed["scenarios"])
    for name, scenario in recorded["scenarios"].items():
        pages = committed["scenarios"][name]["pages"]
        assert list(scenario["pages"]) == list(pages), name
        for label, page in scenario["pages"].items():
            for i, (now, then) in enumerate(zip(page["timeline"], pages[label]["timeline"], strict=False)):
                assert now == then, f"{name}, {label}, entry {i} (python -m tests.server.build_session_vectors)"
            assert page == pages[label], f"{name}, {label}"
    assert dumps(recorded) == PATH.read_text(encoding="utf-8"), "the file's layout: regenerate it"
