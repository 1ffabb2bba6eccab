"""The browser client: plain HTML, CSS and JavaScript modules under ``static/``, no build step.

``halfmoon serve`` serves these files itself; this package only tells the server where they are.
"""

from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"
INDEX_HTML = STATIC_DIR / "index.html"
