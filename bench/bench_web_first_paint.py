"""How fast the browser client paints its first board: a real server on 127.0.0.1 and Debian's
chromium; for N loads of /play/{code}, the time from navigation start to the first frame
showing all 20 positions with their cards (the WebSocket round trip included), and the
first contentful paint. Run by hand: ``python bench/bench_web_first_paint.py [N]``.
"""

from __future__ import annotations

import gzip
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.ports import free_port  # noqa: E402
from tests.web.conftest import _RUNNER  # noqa: E402

BOARD_READY = """() => new Promise(resolve => {
  const check = () => document.querySelectorAll('.board [data-pos][data-card]').length === 20
    ? resolve(performance.now()) : requestAnimationFrame(check);
  check();
})"""


def main() -> None:
    loads = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        command = [sys.executable, "-c", _RUNNER, str(port), f"{tmp}/db.sqlite", f"{tmp}/data"]
        server = subprocess.Popen(command, cwd=ROOT)
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"{base}/healthz", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            board_ms: list[float] = []
            fcp_ms: list[float] = []
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for _ in range(loads):
                    context = browser.new_context(viewport={"width": 360, "height": 640})
                    # a player who chose a name (a first visit asks for one before the board)
                    context.add_init_script("localStorage.setItem('halfmoon.settings', '{\"name\": \"Bench\"}')")
                    page = context.new_page()
                    page.goto(f"{base}/play/HM1-N-AAAAAAB", wait_until="commit")
                    board_ms.append(page.evaluate(BOARD_READY))
                    fcp_ms.append(page.evaluate(
                        "performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN"))
                    context.close()
                browser.close()
        finally:
            server.terminate()
            server.wait()
    files = [p for p in (ROOT / "client" / "halfmoon_web" / "static").rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    sent = sum(len(gzip.compress(p.read_bytes(), compresslevel=9, mtime=0)) for p in files)
    print(f"assets: {total} bytes uncompressed, {sent} bytes as sent (gzip)")
    print(f"first contentful paint: median {statistics.median(fcp_ms):.0f} ms over {loads} loads")
    print(f"board with its 20 cards: median {statistics.median(board_ms):.0f} ms, max {max(board_ms):.0f} ms")


if __name__ == "__main__":
    main()
