"""tests/ports.py: a test's child servers get ports from a block of their worker's own, below the
kernel's ephemeral range, each free when given and not given twice in a row."""

from __future__ import annotations

import socket

import pytest

from tests import ports


def test_each_worker_has_a_block_of_its_own_below_the_ephemeral_range(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = []
    for worker in range(ports.BLOCKS):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{worker}")
        blocks.append(set(ports.worker_block()))
    assert all(len(block) == ports.BLOCK for block in blocks)
    assert len(set().union(*blocks)) == ports.BLOCKS * ports.BLOCK, "the blocks overlap"
    assert max(set().union(*blocks)) < 32768 and max(set().union(*blocks)) + 10000 < 65536
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert ports.worker_block() == range(ports.FIRST_PORT, ports.FIRST_PORT + ports.BLOCK), "one process: the first"


def test_a_port_given_is_in_the_block_free_and_not_given_again_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    given = [ports.free_port() for _ in range(20)]
    assert all(port in ports.worker_block() for port in given)
    assert len(set(given)) == len(given)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", given[-1]))  # free when given


def test_a_taken_port_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw2")
    monkeypatch.setattr(ports, "_turn", iter(range(10**6)))
    block = ports.worker_block()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", block[0]))
        holder.listen()
        assert ports.free_port() == block[1]
