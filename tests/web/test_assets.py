"""The browser client's files: small, self-contained (no CDN, font or image from elsewhere) and
served by the package that the server points at."""

from __future__ import annotations

import gzip
import re

from halfmoon_web import INDEX_HTML, STATIC_DIR

ASSETS = sorted(p for p in STATIC_DIR.rglob("*") if p.is_file())


def test_the_client_is_plain_html_css_and_js_modules_under_100_kb() -> None:
    """What a browser downloads (the server gzips HTML, CSS and JS: static.py) is under 100 KB;
    the files as written, comments and all, stay under 256 KB. (128 KB until the player's history
    page, js/me.js, 160 KB until the deal codes' module, js/codes.js, that checks a sealed race's
    deal, 192 KB until what a screen reader hears, js/announce.js, and the ranked results' words,
    224 KB until the quick-race queue, the live races, ratings and accounts: js/queue.js,
    watchlist.js, ratings.js, account.js. The budget that matters is the gzip-sent size: ~88 KB
    of its 100 since then.)"""
    assert INDEX_HTML in ASSETS
    kinds = {p.suffix for p in ASSETS}
    assert kinds <= {".html", ".css", ".js"}, kinds
    sent = sum(len(gzip.compress(p.read_bytes(), compresslevel=9, mtime=0)) for p in ASSETS)
    assert sent < 100 * 1024, f"the client downloads {sent} bytes"
    total = sum(p.stat().st_size for p in ASSETS)
    assert total < 256 * 1024, f"the client's files weigh {total} bytes"


def test_nothing_is_loaded_from_elsewhere() -> None:
    for path in ASSETS:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), path
        assert not re.search(r"""url\(\s*["']?(https?:)?//""", text), path
        assert "@import" not in text and "@font-face" not in text, path
        assert not re.search(r"""from\s+["']https?:""", text), path


def test_every_module_the_page_imports_exists() -> None:
    for path in ASSETS:
        if path.suffix != ".js":
            continue
        for name in re.findall(r"""from\s+["'](\./[^"']+)["']""", path.read_text(encoding="utf-8")):
            assert (path.parent / name).is_file(), f"{path.name} imports missing {name}"
    for ref in re.findall(r"""(?:src|href)="/static/([^"]+)\"""", INDEX_HTML.read_text(encoding="utf-8")):
        assert (STATIC_DIR / ref).is_file(), ref
