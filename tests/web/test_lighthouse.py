"""Lighthouse (from npm, on Debian's chromium; the mobile preset, its default) on the home page and
on a game's page: accessibility, best practices and SEO 100, performance 95 at least.

A game's page needs a chosen name (else it asks for one): the test starts the chromium that
Lighthouse drives itself, with a remote-debugging port, saves the name in that profile's
localStorage through Playwright's CDP connection, and tells Lighthouse not to reset the storage.
Performance is a measurement on a shared, loaded machine: a page is measured up to three times and
its best run counts; every other category must be 100 on that run."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser

from tests.conftest import CHROMIUM_ARGS
from tests.ports import free_port
from tests.web.audits import LIGHTHOUSE_CLI, require_tool
from tests.web.conftest import load_vector, stop_process, wait_answering

pytestmark = pytest.mark.browser

CODE = load_vector("won_records.json")["records"][0]["code"]
TRIES = 3


@pytest.fixture(scope="module")
def chrome(chromium_path: str, browser: Browser, server: str) -> Iterator[int]:
    """A headless chromium with a debugging port (the port), its profile holding a player's name."""
    cli = require_tool("Lighthouse (npm)", LIGHTHOUSE_CLI, "node")
    assert cli.is_file()
    port = free_port()
    # (chromium's last writes to its profile may outlive it by a moment: no error for a leftover)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen(
            [
                chromium_path,
                "--headless=new",
                f"--remote-debugging-port={port}",
                f"--user-data-dir={profile}",
                *CHROMIUM_ARGS,
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            if not wait_answering(f"http://127.0.0.1:{port}/json/version", proc, 30):
                pytest.fail("chromium with a debugging port did not start")
            remote = browser.browser_type.connect_over_cdp(f"http://127.0.0.1:{port}")
            page = remote.contexts[0].new_page()
            page.goto(server + "/rules")
            page.evaluate("() => localStorage.setItem('halfmoon.settings', JSON.stringify({ name: 'Ada' }))")
            page.close()
            remote.close()
            yield port
        finally:
            stop_process(proc)


def lighthouse(port: int, url: str, out: Path) -> dict[str, Any]:
    subprocess.run(
        [
            "node",
            str(LIGHTHOUSE_CLI),
            url,
            f"--port={port}",
            "--disable-storage-reset",
            "--quiet",
            "--output=json",
            f"--output-path={out}",
            "--only-categories=performance,accessibility,best-practices,seo",
        ],
        check=True,
        timeout=180,
        env={**os.environ, "CHROME_PATH": "/usr/bin/chromium"},
    )
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return report


def scores(report: dict[str, Any]) -> dict[str, float]:
    return {name: category["score"] for name, category in report["categories"].items()}


def failing(report: dict[str, Any]) -> list[str]:
    return [
        f"{a['id']}: {a.get('displayValue', '')} {a['title']}"
        for a in report["audits"].values()
        if a.get("score") is not None and a["score"] < 1 and a["scoreDisplayMode"] in ("binary", "numeric")
    ]


@pytest.mark.parametrize("path", ["/", f"/play/{CODE}"], ids=["home", "game"])
def test_lighthouse_scores_the_page_100_and_fast(chrome: int, server: str, path: str, tmp_path: Path) -> None:
    runs = []
    for attempt in range(TRIES):
        report = lighthouse(chrome, server + path, tmp_path / f"{attempt}.json")
        runs.append(scores(report))
        if runs[-1]["performance"] >= 0.95:
            break
    best = max(range(len(runs)), key=lambda i: runs[i]["performance"])
    found = runs[best]
    report = json.loads((tmp_path / f"{best}.json").read_text(encoding="utf-8"))
    assert report["finalDisplayedUrl"].endswith(path)
    assert {k: v for k, v in found.items() if k != "performance"} == {
        "accessibility": 1,
        "best-practices": 1,
        "seo": 1,
    }, failing(report)
    assert found["performance"] >= 0.95, f"performance in {len(runs)} runs: {[r['performance'] for r in runs]}"
    # the legible-text audit passed; and on the game's page it measured a board (20 buttons of
    # 5 elements each), not the form asking for a name (about 40 elements)
    assert report["audits"]["font-size"]["score"] == 1, report["audits"]["font-size"].get("details")
    if path != "/":
        assert report["audits"]["dom-size"]["numericValue"] >= 120, report["audits"]["dom-size"]
