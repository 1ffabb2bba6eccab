"""Per-address counts and credits (core/limits.py): a limit holds exactly at its value, and 0
means no limit, as the settings' help says (--max-connections-per-address 0)."""

from __future__ import annotations

from halfmoon_server.core.limits import AddressCount, CreatorLimits
from halfmoon_server.web.admission import tcp_limit


def test_an_address_holds_its_limit_and_not_one_more_until_one_is_released() -> None:
    counts = AddressCount(3)
    assert [counts.acquire("203.0.113.7") for _ in range(4)] == [True, True, True, False]
    assert counts.acquire("203.0.113.8")  # another address has its own count
    counts.release("203.0.113.7")
    assert counts.acquire("203.0.113.7") and not counts.acquire("203.0.113.7")


def test_a_limit_of_zero_counts_without_limit_and_forgets_an_address_once_it_holds_nothing() -> None:
    counts = AddressCount(0)
    assert all(counts.acquire("203.0.113.7") for _ in range(10_000))
    assert counts.counts == {"203.0.113.7": 10_000}
    for _ in range(10_000):
        counts.release("203.0.113.7")
    assert counts.counts == {}


def test_the_tcp_cap_sits_above_the_websocket_cap_and_zero_stays_no_limit() -> None:
    assert tcp_limit(256) == 2 * 256 + 16
    assert tcp_limit(1) > 1
    assert tcp_limit(0) == 0


def test_room_credits_refill_at_their_rate() -> None:
    limits = CreatorLimits(burst=2, per_s=1.0)
    assert [limits.allow("a", 0.0) for _ in range(3)] == [True, True, False]
    assert not limits.allow("a", 0.5)
    assert limits.allow("a", 1.6)  # a credit came back
    assert limits.allow("b", 0.0)  # another address has its own credits
