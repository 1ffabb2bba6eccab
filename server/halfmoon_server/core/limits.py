"""Credit-based rate limits (lila-ws style): per connection for messages, per client address
for new rooms."""

from __future__ import annotations


class RateLimit:
    """Credits: a burst of ``burst`` messages refilled at ``per_s`` a second."""

    __slots__ = ("burst", "credits", "last", "per_s", "refused_in_row")

    def __init__(self, burst: float, per_s: float, now: float) -> None:
        self.burst = burst
        self.per_s = per_s
        self.credits = burst
        self.last = now
        self.refused_in_row = 0

    def allow(self, now: float) -> bool:
        self.credits = min(self.burst, self.credits + (now - self.last) * self.per_s)
        self.last = now
        if self.credits >= 1.0:
            self.credits -= 1.0
            self.refused_in_row = 0
            return True
        self.refused_in_row += 1
        return False


class CreatorLimits:
    """Room-creation credits per client address (a :class:`RateLimit` each), so one client
    cannot fill the server. Addresses whose credits have refilled are forgotten."""

    MAX_TRACKED = 100_000

    def __init__(self, burst: float, per_s: float) -> None:
        self.burst = burst
        self.per_s = per_s
        self.limits: dict[str, RateLimit] = {}

    def allow(self, client: str, now: float) -> bool:
        limit = self.limits.get(client)
        if limit is None:
            if len(self.limits) >= self.MAX_TRACKED:
                self._forget_refilled(now)
            limit = self.limits[client] = RateLimit(self.burst, self.per_s, now)
        return limit.allow(now)

    def _forget_refilled(self, now: float) -> None:
        full = [c for c, lim in self.limits.items() if lim.credits + (now - lim.last) * lim.per_s >= lim.burst]
        for client in full:
            del self.limits[client]
        if len(self.limits) >= self.MAX_TRACKED:  # everyone is busy: start afresh rather than grow
            self.limits.clear()


class AddressCount:
    """Open connections per client address, at most ``limit`` each (0: no limit)."""

    __slots__ = ("counts", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.counts: dict[str, int] = {}

    def acquire(self, address: str) -> bool:
        """Count one more connection from ``address``; False (nothing counted) when it has its limit."""
        held = self.counts.get(address, 0)
        if self.limit and held >= self.limit:
            return False
        self.counts[address] = held + 1
        return True

    def release(self, address: str) -> None:
        held = self.counts.get(address, 0) - 1
        if held > 0:
            self.counts[address] = held
        else:
            self.counts.pop(address, None)
