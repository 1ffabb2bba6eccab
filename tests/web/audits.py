"""The audit tools the web uses, from the npm registry (tests/web/package.json, installed by
``npm ci --ignore-scripts --prefix tests/web``, as .ci/run does): axe-core, Lighthouse and the Nu
HTML checker (vnu-jar, run on the machine's Java). A tool that is missing skips its tests with the
command that installs it — except under CI=true, where it fails them (tests/conftest.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from playwright.sync_api import Page

from tests.conftest import require_service

NODE_MODULES = Path(__file__).resolve().parent / "node_modules"
INSTALL = "npm ci --ignore-scripts --prefix tests/web"
AXE_JS = NODE_MODULES / "axe-core" / "axe.min.js"
LIGHTHOUSE_CLI = NODE_MODULES / "lighthouse" / "cli" / "index.js"
VNU_JAR = NODE_MODULES / "vnu-jar" / "build" / "dist" / "vnu.jar"


def require_tool(name: str, path: Path, *programs: str) -> Path:
    """The tool's file, or a skip (a failure under CI=true) saying how to install it."""
    missing = [p for p in programs if shutil.which(p) is None]
    require_service(name, not missing, f"no {', '.join(missing)} on the PATH")
    require_service(name, path.is_file(), f"{path} is missing; run `{INSTALL}`")
    return path


#: Every axe-core rule but those for level AAA (7:1 contrast and the like): WCAG 2.0-2.2 A and AA,
#: axe's best practices (one h1, no empty table header…) and its experimental rules
#: (label-content-name-mismatch among them), whatever their impact.
_RUN_AXE = """async () => {
  const rules = axe.getRules().filter((r) => !r.tags.some((tag) => /^wcag2\\d*aaa$/.test(tag))).map((r) => r.ruleId);
  const result = await axe.run(document, { runOnly: { type: "rule", values: rules }, resultTypes: ["violations"] });
  return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => ({ target: n.target.join(" "), summary: n.failureSummary, html: n.html.slice(0, 160) })) }));
}"""


def axe_violations(page: Page, source: str) -> list[dict[str, Any]]:
    """axe-core's violations on the page as it is now. The app's CSP allows no injected script
    element: axe's source is evaluated through the DevTools protocol (page.evaluate), which it
    does not govern."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(source + "\n;true")
    violations: list[dict[str, Any]] = page.evaluate(_RUN_AXE)
    return violations
