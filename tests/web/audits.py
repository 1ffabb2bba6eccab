"""The audit tools the web uses, from the npm registry (tests/web/package.json, installed by
``npm ci --ignore-scripts --prefix tests/web``, as .ci/run does): axe-core, Lighthouse and the Nu
HTML checker (vnu-jar, run on the machine's Java). A tool that is missing skips its tests with the
command that installs it — except under CI=true, where it fails them (tests/conftest.py)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
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
    nodes: v.nodes.map((n) => ({ target: n.target.join(" "), summary: n.failureSummary })) }));
}"""


def axe_violations(page: Page, source: str) -> list[dict[str, Any]]:
    """axe-core's violations on the page as it is now. The app's CSP allows no injected script
    element: axe's source is evaluated through the DevTools protocol (page.evaluate), which it
    does not govern."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(source + "\n;true")
    violations: list[dict[str, Any]] = page.evaluate(_RUN_AXE)
    return violations


#: What the Nu HTML checker says of app.css that is its own gap, not an error (CSS it does not
#: know yet, in every browser the client supports): container queries — the property
#: `container-type`, the at-rule `@container`, and the custom properties `--cw` and `--ch`, whose
#: values use container query units (`cqw`, `cqh`), which it cannot parse. Only these are filtered.
CSS_CHECKER_GAPS = frozenset(
    {
        "“container-type”: Property “container-type” doesn't exist.",
        "Unrecognized at-rule “@container”",
        "“--cw”: Parse Error.",
        "“--ch”: Parse Error.",
    }
)


class NuChecker:
    """The Nu HTML checker (vnu.jar) as a web service on 127.0.0.1, started once (its JVM takes
    seconds to start; a check then takes milliseconds)."""

    def __init__(self, jar: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        self.url = f"http://127.0.0.1:{port}/?out=json"
        self.proc = subprocess.Popen(
            [
                "java",
                "-Dnu.validator.servlet.bind-address=127.0.0.1",
                "-cp",
                str(jar),
                "nu.validator.servlet.Main",
                str(port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 90
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError("the Nu HTML checker did not start") from None
                time.sleep(0.3)

    def messages(self, text: str, content_type: str = "text/html") -> list[dict[str, Any]]:
        """Every error and warning (info messages aside) on `text`; CSS checks drop CSS_CHECKER_GAPS."""
        request = urllib.request.Request(
            self.url, data=text.encode("utf-8"), headers={"Content-Type": f"{content_type}; charset=utf-8"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            found = json.loads(response.read())["messages"]
        return [
            m
            for m in found
            if (m["type"] == "error" or m.get("subType") == "warning")
            and not (content_type == "text/css" and m["message"] in CSS_CHECKER_GAPS)
        ]

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
