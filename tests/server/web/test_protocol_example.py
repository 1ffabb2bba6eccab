"""docs/protocol.md's worked example is what the server really sends."""

from __future__ import annotations

from tests.conftest import ROOT
from tests.server.protocol_example import generate, normalise


async def test_the_worked_example_in_protocol_md_is_what_the_server_sends() -> None:
    doc = (ROOT / "docs" / "protocol.md").read_text()
    section = doc[doc.index("## A whole race, worked through") :]
    block = section[section.index("```text\n") + len("```text\n") :]
    block = block[: block.index("```")]
    documented = normalise(block).strip().splitlines()
    produced = normalise("\n".join(await generate())).splitlines()
    assert produced == documented
