"""The layers of a move's CPU (``bench/perf_layers.py``): how it reads ``perf script``'s text and
which layer a sample counts in (figures are measured by hand and written in docs/benchmarks.md,
never asserted here)."""

from __future__ import annotations

from types import ModuleType

from tests.bench.conftest import bench_script

#: two samples as ``perf script`` prints them: a write made while the room applied an entry,
#: then a sample in code perf cannot name
SCRIPT = """\
python 22167   762.058339:    2004008 cpu-clock:\x20
\tffffffff81f0bc3d __sys_sendto+0x22d ([kernel.kallsyms])
\t          10aba4 __libc_send+0x64 (inlined)
\t            77f2 sock_send+0x62 (/usr/lib/python3.11/lib-dynload/_socket.so)
\t          1a2b3c CPyDef_connection___Connection___flush+0x1c (/tmp/x__mypyc.so)
\t          1a2b3c CPyDef_room___Room___publish+0x1c (/tmp/x__mypyc.so)
\t          1a2b3c CPyDef_room___Room___deliver+0x10 (/tmp/x__mypyc.so)

python 22167   762.060341:    2004008 cpu-clock:\x20
\t           fd9c2 _PyEval_EvalFrameDefault+0x2e52 (/usr/lib/libpython3.11.so.1.0)
"""


def _script() -> ModuleType:
    return bench_script("perf_layers")


def test_a_samples_frames_are_read_innermost_first_without_offsets_or_libraries() -> None:
    found = _script().samples(SCRIPT.splitlines())
    assert found == [
        [
            "__sys_sendto",
            "__libc_send",
            "sock_send",
            "CPyDef_connection___Connection___flush",
            "CPyDef_room___Room___publish",
            "CPyDef_room___Room___deliver",
        ],
        ["_PyEval_EvalFrameDefault"],
    ]


def test_a_sample_counts_in_the_first_layer_that_holds_one_of_its_frames() -> None:
    script = _script()
    layer = {name.split(" (")[0].split(":")[0]: name for name, _ in script.LAYERS}
    write, room = layer["the writes to the sockets"], layer["the room"]
    assert (
        script.layer_of(["sock_send", "CPyDef_connection___Connection___flush", "CPyDef_room___Room___deliver"])
        == write
    )
    assert script.layer_of(["CPyDef_audience___Audience___frames", "CPyDef_room___Room___deliver"]) == room
    # a collection that starts while the room applies an entry is the collector's
    assert script.layer_of(["gc_collect_main", "CPyDef_room___Room___deliver"]) == layer["the garbage collector"]
    assert script.layer_of(["_PyEval_EvalFrameDefault"]) == script.OTHER
    # an entry applied as its round's commit on the loop returns is the room's; the commit itself
    # is the journal's on the loop, and on the journal's thread the thread's
    inline, commit = "CPyDef_journal___JournalLog____commit_inline", "CPyDef_journal___JournalLog____commit"
    assert script.layer_of(["CPyDef_room___Room___deliver", "CPyDef_journal___JournalLog____committed", inline]) == room
    assert script.layer_of(["sqlite3_step", commit, inline]) == layer["the journal's commits on the loop's thread"]
    on_thread = ["sqlite3_step", commit, "CPyDef_journal____Worker____serve"]
    assert script.layer_of(on_thread) == layer["the journal's thread"]


def test_the_shares_add_up_and_every_layer_is_said_even_when_empty() -> None:
    script = _script()
    shares = script.shares(script.samples(SCRIPT.splitlines()))
    assert list(shares) == [name for name, _ in script.LAYERS] + [script.OTHER]
    assert shares[script.OTHER] == 0.5 and sum(shares.values()) == 1.0
