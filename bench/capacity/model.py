"""The capacity model: a deterministic discrete-event simulation of a day's peak, run by hand:
``python bench/capacity/model.py [--units bench/capacity/unit_costs.json] [--validate]``.

No network, no clock, no global randomness: the same unit costs, load model and seed give the
same plan, to the last digit. The unit costs come from ``measure.py`` (unit_costs.json); what
they mean and how they were measured is in docs/capacity.md.

How it works:

1. **Load.** Players arrive through the day at a rate ``λ(t) = λ0 · (1 + peak_factor ·
   exp(-t²/2σ²))``, ``t`` the time to the daily reset (00:00 UTC); they arrive a room at a time
   (races of 2–8 players, weights in :class:`LoadModel`), each room with its spectators. A room
   waits ``lobby_s`` in its lobby, then races: each player plays a number of moves and thinks
   between them, both drawn from the bots' measured distributions (inverse CDF of the
   quantiles in unit_costs.json); the room ends when its last player is done.
2. **Simulation.** A sample population (``sample_players`` players at the peak) is simulated
   event by event — room arrival, start, every move, every player's end, room end — over a
   window around the reset; every event charges its unit costs to one-second buckets:
   server CPU, Redis CPU/commands/bytes, PostgreSQL commits/WAL/CPU, WebSocket bytes,
   connections, live rooms. The sample is then scaled linearly to the target concurrency.
3. **Plan.** The peak of each resource (its mean over the middle third of the window, where
   the arrival rate is within 1 % of its top; players, connections and live rooms as
   time-weighted means there) is divided by what one machine of each kind carries
   (:class:`Machines`), and the largest quotient is the first bottleneck. Instance CPU depends
   on the instance count itself when a room's members are spread over instances (every
   instance holding a room applies and relays each of its moves): the count is the smallest
   that carries its own load.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import random
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

HERE = Path(__file__).resolve().parent
UNITS = HERE / "unit_costs.json"
VALIDATION = HERE / "validation.json"
TARGETS = (10_000, 100_000, 1_000_000)

#: "spread": nginx round robin (an older client: every connection anywhere); "routed": nginx
#: routing by room (deploy/nginx.conf) as it is today, where the instance that made a room (over
#: REST, or a new game's first socket: they name no room yet) holds it too; "room": one instance
#: per room (a room held where its members are routed: the owner work of issue 30)
Placement = Literal["spread", "routed", "room"]
#: "bots": the bots' own think time (no round trip: the most moves a second); "measured": the gaps
#: between a bot's moves measured here (think time plus this loaded machine's round trip)
Pace = Literal["bots", "measured"]


class ModelError(ValueError):
    """Inputs the model cannot use (a missing unit cost, a negative size...); the message says which."""


@dataclass(frozen=True, slots=True)
class UnitCosts:
    """The measured cost of each unit of work (µs of CPU, commands, bytes), from unit_costs.json."""

    server_us_per_room: float
    server_us_per_connection: float
    server_us_move_base: float
    server_us_per_recipient: float
    server_us_per_extra_holder: float
    server_idle_us_per_s: float
    rss_kib_per_connection: float
    redis_us_per_room: float
    redis_us_per_connection: float
    redis_us_per_move: float
    redis_us_per_extra_holder: float
    redis_commands_per_room: float
    redis_commands_per_connection: float
    redis_commands_per_move: float
    redis_publishes_per_extra_holder: float
    redis_publish_us: float
    redis_in_bytes_per_move: float
    redis_out_bytes_per_move: float
    redis_bytes_per_active_room: float
    redis_idle_commands_per_instance_s: float
    pg_commits_per_player_game: float
    pg_wal_bytes_per_player_game: float
    pg_db_bytes_per_player_game: float
    pg_cpu_us_per_player_game: float
    ws_out_bytes_per_connection: float
    ws_in_bytes_per_connection: float
    ws_out_bytes_move_base: float
    ws_out_bytes_per_recipient: float
    ws_in_bytes_per_move: float
    gap_ms_quantiles: tuple[float, ...]
    think_ms_quantiles: tuple[float, ...]
    moves_quantiles: tuple[float, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UnitCosts:
        """Read measure.py's JSON. Raises :class:`ModelError` naming a missing figure."""
        try:
            server, redis, pg, ws, bots = (data[k] for k in ("server", "redis", "postgres", "websocket", "bots"))
            per_recipient = float(server["server_cpu_us_per_recipient"])
            ws_recipient = float(ws["ws_out_bytes_per_recipient"])
            redis_move = float(redis["redis_cpu_us_at_5_recipients"])
            redis_spread = float(redis.get("redis_cpu_us_per_move_spread", redis_move))
            extra_holders = float(data.get("spread_extra_holders", 1.0))
            return cls(
                server_us_per_room=float(server["server_cpu_us_per_room"]),
                server_us_per_connection=float(server["server_cpu_us_per_connection"]),
                server_us_move_base=float(server["server_cpu_us_base"]),
                server_us_per_recipient=per_recipient,
                server_us_per_extra_holder=float(server["server_cpu_us_per_extra_holder"]),
                server_idle_us_per_s=float(server["idle_cpu_us_per_s"]),
                rss_kib_per_connection=float(server["rss_kib_per_connection"]),
                redis_us_per_room=float(redis["redis_cpu_us_per_room"]),
                redis_us_per_connection=float(redis["redis_cpu_us_per_connection"]),
                redis_us_per_move=redis_move,
                redis_us_per_extra_holder=max(0.0, (redis_spread - redis_move) / extra_holders),
                redis_commands_per_room=float(redis["redis_commands_per_room"]),
                redis_commands_per_connection=float(redis["redis_commands_per_connection"]),
                redis_commands_per_move=float(redis["redis_commands_at_5_recipients"]),
                redis_publishes_per_extra_holder=float(redis["redis_publishes_per_extra_holder"]),
                redis_publish_us=float(redis["redis_publish_us"]),
                redis_in_bytes_per_move=float(redis["redis_in_bytes_at_5_recipients"]),
                redis_out_bytes_per_move=float(redis["redis_out_bytes_at_5_recipients"]),
                redis_bytes_per_active_room=float(redis["bytes_per_active_room"]),
                redis_idle_commands_per_instance_s=float(redis["idle_commands_per_instance_s"]),
                pg_commits_per_player_game=float(pg["commits_per_player_game"]),  # save_game: one transaction
                pg_wal_bytes_per_player_game=float(pg["wal_bytes_per_player_game"]),
                pg_db_bytes_per_player_game=float(pg["db_bytes_per_player_game"]),
                pg_cpu_us_per_player_game=float(pg["backend_cpu_us_per_player_game"]),
                ws_out_bytes_per_connection=float(ws["ws_out_bytes_per_connection"]),
                ws_in_bytes_per_connection=float(ws["ws_in_bytes_per_connection"]),
                ws_out_bytes_move_base=float(ws["ws_out_bytes_at_5_recipients"]) - 5 * ws_recipient,
                ws_out_bytes_per_recipient=ws_recipient,
                ws_in_bytes_per_move=float(ws["ws_in_bytes_at_5_recipients"]),
                gap_ms_quantiles=tuple(float(x) for x in bots["gap_ms_quantiles"]),
                think_ms_quantiles=tuple(float(x) for x in bots["think_ms_quantiles"]),
                moves_quantiles=tuple(float(x) for x in bots["moves_per_player_quantiles"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"unit costs: missing or bad figure {exc}") from None

    @classmethod
    def load(cls, path: Path) -> UnitCosts:
        """Read unit_costs.json. Raises :class:`ModelError` (and ``OSError`` for an unreadable file)."""
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ModelError(f"{path}: not JSON: {exc}") from None
        return cls.from_json(data)

    def server_us_per_move(self, recipients: float, holders: float) -> float:
        """One move's server CPU, summed over the instances holding its room."""
        return (
            self.server_us_move_base
            + self.server_us_per_recipient * recipients
            + self.server_us_per_extra_holder * (holders - 1)
        )


@dataclass(frozen=True, slots=True)
class LoadModel:
    """Who plays, when and how. Defaults: races of 2–8 players (equally likely), one spectator a
    race, 20 s in the lobby, the bots' think times and game lengths, an arrival peak 5× the
    day's base rate around the reset (σ = 30 min)."""

    room_sizes: tuple[int, ...] = (2, 3, 4, 5, 6, 7, 8)
    room_weights: tuple[float, ...] = (1, 1, 1, 1, 1, 1, 1)
    spectators_per_room: int = 1
    lobby_s: float = 20.0
    think_scale: float = 1.0
    peak_factor: float = 4.0
    peak_sigma_s: float = 1800.0
    placement: Placement = "spread"
    pace: Pace = "bots"

    def __post_init__(self) -> None:
        if len(self.room_sizes) != len(self.room_weights) or not self.room_sizes:
            raise ModelError(f"room_sizes {self.room_sizes} and room_weights {self.room_weights} must pair up")
        if min(self.room_sizes) < 1 or min(self.room_weights) < 0 or sum(self.room_weights) <= 0:
            raise ModelError(f"room sizes must be ≥ 1 and weights ≥ 0, not {self.room_sizes} / {self.room_weights}")
        if self.spectators_per_room < 0 or self.lobby_s < 0 or self.think_scale <= 0 or self.peak_sigma_s <= 0:
            raise ModelError("spectators, lobby time, think scale and peak width must be positive")
        if self.pace not in ("bots", "measured"):
            raise ModelError(f"pace is 'bots' or 'measured', not {self.pace!r}")
        if self.placement not in ("spread", "routed", "room"):
            raise ModelError(f"placement is 'spread', 'routed' or 'room', not {self.placement!r}")

    def rate(self, t: float) -> float:
        """The arrival rate at ``t`` seconds from the reset, relative to the day's base rate."""
        return 1.0 + self.peak_factor * math.exp(-0.5 * (t / self.peak_sigma_s) ** 2)

    def day_integral_s(self) -> float:
        """∫ rate over a day, in seconds of base rate (the peak is narrow: its tails are in)."""
        return 86_400 + self.peak_factor * self.peak_sigma_s * math.sqrt(2 * math.pi)

    def mean_room_size(self) -> float:
        return sum(s * w for s, w in zip(self.room_sizes, self.room_weights, strict=True)) / sum(self.room_weights)


@dataclass(frozen=True, slots=True)
class Machines:
    """What one machine of each kind carries. An instance is one server process (one core: the
    server is one asyncio loop); the figures are the targets an operator would plan with, not
    limits measured here (they are assumptions, listed in docs/capacity.md)."""

    instance_cpu_target: float = 0.6
    instance_memory_mib: float = 1536.0
    instance_max_connections: int = 20_000
    redis_cpu_target: float = 0.5
    redis_memory_mib: float = 8192.0
    redis_network_bytes_s: float = 62_500_000.0  # half of 1 Gbit/s
    pg_cores: int = 32
    pg_cpu_target: float = 0.6
    pg_wal_bytes_s: float = 100_000_000.0
    retention_days: int = 30


@dataclass(slots=True)
class Buckets:
    """What the simulation charged to each second of the window."""

    seconds: int
    cost: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, t: float, value: float) -> None:
        i = int(t)
        if 0 <= i < self.seconds:
            series = self.cost.get(name)
            if series is None:
                series = self.cost[name] = [0.0] * self.seconds
            series[i] += value

    def level(self, name: str, t: float, value: float) -> None:
        """Keep the highest ``value`` seen in the second of ``t`` (a level, not a rate)."""
        i = int(t)
        if 0 <= i < self.seconds:
            series = self.cost.setdefault(name, [0.0] * self.seconds)
            series[i] = max(series[i], value)

    def mean(self, name: str, start: int, end: int) -> float:
        """The mean of a rate over the seconds ``start``..``end`` (0 if nothing was charged)."""
        series = self.cost.get(name)
        return sum(series[start:end]) / (end - start) if series else 0.0


def _inverse_cdf(quantiles: Sequence[float], u: float) -> float:
    """A draw from evenly spaced quantiles (min..max), interpolated linearly."""
    position = u * (len(quantiles) - 1)
    low = min(int(position), len(quantiles) - 2)
    return quantiles[low] + (quantiles[low + 1] - quantiles[low]) * (position - low)


@dataclass(slots=True)
class Room:
    size: int
    spectators: int
    arrive: float
    start: float
    moves: list[list[float]]  # each player's move times

    @property
    def connections(self) -> int:
        return self.size + self.spectators

    def end(self) -> float:
        return max([self.start, *(m[-1] for m in self.moves if m)])


def draw_room(units: UnitCosts, load: LoadModel, rng: random.Random, arrive: float, size: int) -> Room:
    """A room's whole game, drawn: each player's moves and when they come."""
    start = arrive + load.lobby_s
    gaps = units.think_ms_quantiles if load.pace == "bots" else units.gap_ms_quantiles
    moves = []
    for _ in range(size):
        count = round(_inverse_cdf(units.moves_quantiles, rng.random()))
        t = start
        times = []
        for _ in range(count):
            t += _inverse_cdf(gaps, rng.random()) * load.think_scale / 1000
            times.append(t)
        moves.append(times)
    return Room(size, load.spectators_per_room, arrive, start, moves)


def run_events(rooms: Iterator[Room] | list[Room], units: UnitCosts, buckets: Buckets, *, offset: float) -> int:
    """The discrete-event loop: every room's arrival, start, moves, players' ends and its end,
    in time order, each charging its costs to the second it happens in (``t - offset``).
    Returns the moves played. Holder-dependent costs are charged per room size (the instance
    count is not known yet: :func:`plan` prices them)."""
    queue: list[tuple[float, int, str, int, int]] = []
    rooms_by_id: list[Room] = []
    for room in rooms:
        rooms_by_id.append(room)
        heapq.heappush(queue, (room.arrive, len(queue), "arrive", len(rooms_by_id) - 1, -1))
    sequence = len(queue)
    connections = 0
    players = 0
    live = 0
    moves = 0
    while queue:
        t, _, kind, index, player = heapq.heappop(queue)
        room = rooms_by_id[index]
        at = t - offset
        if kind == "arrive":
            connections += room.connections
            players += room.size
            live += 1
            buckets.add("server_us", at, units.server_us_per_connection * room.connections)
            buckets.add("redis_us", at, units.redis_us_per_connection * room.connections)
            buckets.add("redis_commands", at, units.redis_commands_per_connection * room.connections)
            buckets.add("ws_out_bytes", at, units.ws_out_bytes_per_connection * room.connections)
            buckets.add("ws_in_bytes", at, units.ws_in_bytes_per_connection * room.connections)
            heapq.heappush(queue, (room.start, sequence, "start", index, -1))
            sequence += 1
        elif kind == "start":
            for p, times in enumerate(room.moves):
                for k, when in enumerate(times):
                    heapq.heappush(queue, (when, sequence, "move", index, p if k == len(times) - 1 else -1))
                    sequence += 1
                if not times:
                    heapq.heappush(queue, (room.start, sequence, "done", index, p))
                    sequence += 1
            heapq.heappush(queue, (room.end(), sequence, "end", index, -1))
            sequence += 1
        elif kind == "move":
            moves += 1
            c = room.connections
            buckets.add("moves", at, 1)
            buckets.add(f"moves_c{c}", at, 1)
            buckets.add("server_us", at, units.server_us_per_move(c, 1))
            buckets.add("redis_us", at, units.redis_us_per_move)
            buckets.add("redis_commands", at, units.redis_commands_per_move)
            buckets.add("redis_bytes", at, units.redis_in_bytes_per_move + units.redis_out_bytes_per_move)
            buckets.add("ws_out_bytes", at, units.ws_out_bytes_move_base + units.ws_out_bytes_per_recipient * c)
            buckets.add("ws_in_bytes", at, units.ws_in_bytes_per_move)
            if player >= 0:  # the player's last move: their game is over and stored
                heapq.heappush(queue, (t, sequence, "done", index, player))
                sequence += 1
        elif kind == "done":
            buckets.add("player_games", at, 1)
            buckets.add("pg_commits", at, units.pg_commits_per_player_game)
            buckets.add("pg_wal_bytes", at, units.pg_wal_bytes_per_player_game)
            buckets.add("pg_us", at, units.pg_cpu_us_per_player_game)
        elif kind == "end":
            connections -= room.connections
            players -= room.size
            live -= 1
            buckets.add("server_us", at, units.server_us_per_room)
            buckets.add("redis_us", at, units.redis_us_per_room)
            buckets.add("redis_commands", at, units.redis_commands_per_room)
        buckets.level("connections", at, connections)
        buckets.level("players", at, players)
        buckets.level("live_rooms", at, live)
    return moves


@dataclass(frozen=True, slots=True)
class Peak:
    """A simulated sample's peak, per second (rates) or at most (levels)."""

    players: float
    connections: float
    live_rooms: float
    moves_s: float
    moves_s_by_connections: dict[int, float]
    server_us_s: float
    redis_us_s: float
    redis_commands_s: float
    redis_bytes_s: float
    ws_out_bytes_s: float
    ws_in_bytes_s: float
    player_games_s: float
    pg_commits_s: float
    pg_wal_bytes_s: float
    pg_us_s: float
    base_rate: float


def simulate_peak(
    units: UnitCosts, load: LoadModel, *, sample_players: int = 300, window_s: int = 900, seed: int = 20261201
) -> Peak:
    """Simulate ``window_s`` seconds centred on the reset with a sample population sized to
    have about ``sample_players`` players racing at the peak; the rooms that arrive in the
    ``warm_up`` before the window are simulated too, so the window starts full."""
    if sample_players <= 0 or window_s < 20:
        raise ModelError(f"sample_players must be positive and window_s ≥ 20, not {sample_players} / {window_s}")
    rng = random.Random(seed)
    mean_moves = sum(units.moves_quantiles) / len(units.moves_quantiles)
    gaps = units.think_ms_quantiles if load.pace == "bots" else units.gap_ms_quantiles
    mean_gap = sum(gaps) / len(gaps) * load.think_scale / 1000
    session_s = load.lobby_s + max(1.0, mean_moves * mean_gap * 1.5)  # a room lasts as long as its slowest
    base_rate = sample_players / session_s / load.rate(0.0)  # players per second at the base rate (Little)
    warm_up = 4 * session_s
    begin, finish = -window_s / 2 - warm_up, window_s / 2
    weights = list(load.room_weights)
    peak_room_rate = base_rate * load.rate(0.0) / load.mean_room_size()

    def arrivals() -> Iterator[Room]:
        t = begin
        while True:  # a non-homogeneous Poisson process, by thinning
            t += rng.expovariate(peak_room_rate)
            if t >= finish:
                return
            if rng.random() * load.rate(0.0) <= load.rate(t):
                size = rng.choices(load.room_sizes, weights)[0]
                yield draw_room(units, load, rng, t, size)

    buckets = Buckets(window_s)
    rooms = list(arrivals())
    run_events(rooms, units, buckets, offset=-window_s / 2)
    # The peak is the middle third of the window (the arrival rate there is within 1 % of its
    # top for σ = 30 min). Rates are their means over it and levels their time-weighted means:
    # a sample's *maximum* level is well above its mean (×1.45 for 300 players), and dividing by
    # it understated every rate per player and the games a day by up to a third.
    low, high = window_s // 3, window_s - window_s // 3
    at_low, at_high = low - window_s / 2, high - window_s / 2

    def level(weight: Callable[[Room], float]) -> float:
        inside = (max(0.0, min(at_high, r.end()) - max(at_low, r.arrive)) for r in rooms)
        return sum(weight(r) * span for r, span in zip(rooms, inside, strict=True)) / (at_high - at_low)

    def rate(name: str) -> float:
        return buckets.mean(name, low, high)

    total_moves = sum(buckets.cost.get("moves", [])) or 1.0
    by_connections = {  # the peak's moves, shared by room size as over the whole window
        int(name.removeprefix("moves_c")): rate("moves") * sum(buckets.cost[name]) / total_moves
        for name in sorted(buckets.cost)
        if name.startswith("moves_c")
    }
    return Peak(
        players=level(lambda r: r.size),
        connections=level(lambda r: r.connections),
        live_rooms=level(lambda r: 1),
        moves_s=rate("moves"),
        moves_s_by_connections=by_connections,
        server_us_s=rate("server_us"),
        redis_us_s=rate("redis_us"),
        redis_commands_s=rate("redis_commands"),
        redis_bytes_s=rate("redis_bytes"),
        ws_out_bytes_s=rate("ws_out_bytes"),
        ws_in_bytes_s=rate("ws_in_bytes"),
        player_games_s=rate("player_games"),
        pg_commits_s=rate("pg_commits"),
        pg_wal_bytes_s=rate("pg_wal_bytes"),
        pg_us_s=rate("pg_us"),
        base_rate=base_rate,
    )


def expected_holders(connections: int, instances: int, placement: Placement) -> float:
    """How many instances hold a room on average: one when a room is held where the balancer
    routes its members (``room``); routed by room but also held by the instance that made it,
    which the balancer chose round robin (``routed``): E = 1 + (1 − 1/I); with round robin
    (``spread``), each connection lands on any instance, so E = I·(1 − (1 − 1/I)^c)."""
    if placement == "room" or instances <= 1:
        return 1.0
    if placement == "routed":
        return 1.0 + (1 - 1 / instances)
    return instances * (1 - (1 - 1 / instances) ** connections)


@dataclass(frozen=True, slots=True)
class Plan:
    """What a target concurrency needs, and why."""

    players: int
    placement: str
    player_games_per_day: int
    connections: int
    live_rooms: int
    moves_s: int
    instances: int
    instance_bound: str
    instances_by: dict[str, int]
    holders_per_room: float
    server_cores: float
    redis_shards: int
    redis_bound: str
    redis_shards_by: dict[str, int]
    redis_commands_s: int
    redis_publish_cores_per_shard: float
    pg_cores: float
    pg_commits_s: int
    pg_wal_mb_s: float
    pg_storage_gb: float
    pg_fits_one_primary: bool
    ws_out_mb_s: float
    first_bottleneck: str
    nearest_wall: str
    nearest_wall_use: float


def plan(units: UnitCosts, load: LoadModel, machines: Machines, players: int, peak: Peak) -> Plan:
    """Size every tier for ``players`` racing at the peak, from a simulated sample's peak."""
    if players <= 0:
        raise ModelError(f"players must be positive, not {players}")
    scale = players / peak.players
    moves_s = peak.moves_s * scale

    def server_cores(instances: int) -> float:
        extra = sum(
            rate * scale * (expected_holders(c, instances, load.placement) - 1) * units.server_us_per_extra_holder
            for c, rate in peak.moves_s_by_connections.items()
        )
        return (peak.server_us_s * scale + extra) / 1e6 + instances * units.server_idle_us_per_s / 1e6

    connections = peak.connections * scale
    by_memory = math.ceil(connections * units.rss_kib_per_connection / 1024 / machines.instance_memory_mib)
    by_connections = math.ceil(connections / machines.instance_max_connections)
    instances = max(1, by_memory, by_connections)
    while server_cores(instances) / instances > machines.instance_cpu_target:  # more instances, more holders
        instances = max(instances + 1, math.ceil(server_cores(instances) / machines.instance_cpu_target))
    by_cpu = instances
    while by_cpu > 1 and server_cores(by_cpu - 1) / (by_cpu - 1) <= machines.instance_cpu_target:
        by_cpu -= 1
    instances_by = {"cpu": by_cpu, "memory": by_memory, "connections": by_connections}
    instance_bound = max(instances_by, key=lambda k: instances_by[k])
    instances = max(instances_by.values())
    holders = (
        sum(r * expected_holders(c, instances, load.placement) for c, r in peak.moves_s_by_connections.items())
        / peak.moves_s
        if peak.moves_s
        else 1.0
    )
    # Redis: the room-keyed work shards by hash tag; every PUBLISH is broadcast to every shard
    # of a Redis Cluster (classic pub/sub), so that part does not shrink with more shards
    publishes_s = moves_s * (holders - 1) * units.redis_publishes_per_extra_holder
    publish_cores = publishes_s * units.redis_publish_us / 1e6
    sharded_cores = peak.redis_us_s * scale / 1e6 + moves_s * (holders - 1) * units.redis_us_per_extra_holder / 1e6
    room_memory = peak.live_rooms * scale * units.redis_bytes_per_active_room
    free_cpu = machines.redis_cpu_target - publish_cores
    # a shard that spends over half its target relaying every other shard's publishes is not a
    # plan: the count would explode as the free share tends to zero (-1: does not fit)
    fits_broadcast = free_cpu >= machines.redis_cpu_target / 2
    shards_by = {
        "cpu": math.ceil(sharded_cores / free_cpu) if fits_broadcast else -1,
        "memory": math.ceil(room_memory / (machines.redis_memory_mib * 2**20)),
        "network": math.ceil(peak.redis_bytes_s * scale / machines.redis_network_bytes_s),
    }
    redis_bound = "publish broadcast" if shards_by["cpu"] < 0 else max(shards_by, key=lambda k: shards_by[k])
    shards = max(1, *shards_by.values()) if shards_by["cpu"] >= 0 else -1
    pg_cores = peak.pg_us_s * scale / 1e6 / machines.pg_cpu_target
    pg_wal = peak.pg_wal_bytes_s * scale
    daily = peak.base_rate * scale * load.day_integral_s()
    storage = daily * units.pg_db_bytes_per_player_game * machines.retention_days / 1e9
    fits = pg_cores <= machines.pg_cores and pg_wal <= machines.pg_wal_bytes_s
    # what one machine of each kind would carry of this load: the tier that must scale out first
    one_machine = {
        "server instances (CPU)": server_cores(1) / machines.instance_cpu_target,
        "server instances (memory)": connections * units.rss_kib_per_connection / 1024 / machines.instance_memory_mib,
        "server instances (connections)": connections / machines.instance_max_connections,
        "Redis (CPU)": (sharded_cores + publish_cores) / machines.redis_cpu_target,
        "Redis (memory)": room_memory / (machines.redis_memory_mib * 2**20),
        "PostgreSQL primary (CPU)": pg_cores / machines.pg_cores,
        "PostgreSQL primary (WAL)": pg_wal / machines.pg_wal_bytes_s,
    }
    first = max(one_machine, key=lambda k: one_machine[k])
    # the limits more machines do not lift: a share of one shard's core every shard pays, one primary
    walls = {
        "Redis publish broadcast": publish_cores / machines.redis_cpu_target,
        "PostgreSQL primary (CPU)": pg_cores / machines.pg_cores,
        "PostgreSQL primary (WAL)": pg_wal / machines.pg_wal_bytes_s,
    }
    wall = max(walls, key=lambda k: walls[k])
    return Plan(
        players=players,
        placement=load.placement,
        player_games_per_day=round(daily),
        connections=round(connections),
        live_rooms=round(peak.live_rooms * scale),
        moves_s=round(moves_s),
        instances=instances,
        instance_bound=instance_bound,
        instances_by=instances_by,
        holders_per_room=round(holders, 3),
        server_cores=round(server_cores(instances), 2),
        redis_shards=shards,
        redis_bound=redis_bound,
        redis_shards_by=shards_by,
        redis_commands_s=round(peak.redis_commands_s * scale + publishes_s),
        redis_publish_cores_per_shard=round(publish_cores, 3),
        pg_cores=round(pg_cores, 2),
        pg_commits_s=round(peak.pg_commits_s * scale),
        pg_wal_mb_s=round(pg_wal / 1e6, 2),
        pg_storage_gb=round(storage, 1),
        pg_fits_one_primary=fits,
        ws_out_mb_s=round(peak.ws_out_bytes_s * scale / 1e6, 2),
        first_bottleneck=first,
        nearest_wall=wall,
        nearest_wall_use=round(walls[wall], 3),
    )


def plans(
    units: UnitCosts, load: LoadModel, machines: Machines, targets: Sequence[int] = TARGETS, **sample: Any
) -> list[Plan]:
    """Plans for each target from one simulated sample (the same peak, scaled)."""
    peak = simulate_peak(units, load, **sample)
    return [plan(units, load, machines, players, peak) for players in targets]


# -- validation against a measured run ---------------------------------------------------------------


def predict_run(units: UnitCosts, run: Mapping[str, Any], *, seed: int = 7) -> dict[str, float]:
    """Predict a measured run (measure.py's ``validation_runs``): its rooms (sizes, a spectator
    each, members round robin over its instances) all arrive at once and race to the end with
    moves and gaps between moves drawn from the bots' distributions as measured in the runs.
    Returns the predicted CPU seconds (server instances and Redis, idle excluded as in the
    measurement) and moves, and the same CPU priced on the run's *measured* move count (the cost
    model alone, without the draw)."""
    rng = random.Random(seed)
    instances = int(run["instances"])
    sizes = [int(s) for s in run["sizes"]]
    spectators = int(run.get("spectators_per_room", 1))
    load = LoadModel(spectators_per_room=spectators, lobby_s=0.0, pace="measured")
    rooms = [draw_room(units, load, rng, 0.0, size) for size in sizes]
    predicted_moves = sum(len(m) for room in rooms for m in room.moves)

    def cost(move_counts: Sequence[float]) -> tuple[float, float]:
        server = redis = 0.0
        for size, moves in zip(sizes, move_counts, strict=True):
            c = size + spectators
            holders = min(instances, c)  # round robin: consecutive members on distinct instances
            server += units.server_us_per_room + units.server_us_per_connection * c
            server += moves * units.server_us_per_move(c, holders)
            redis += units.redis_us_per_room + units.redis_us_per_connection * c
            redis += moves * (units.redis_us_per_move + units.redis_us_per_extra_holder * (holders - 1))
        return server / 1e6, redis / 1e6

    drawn = [float(sum(len(m) for m in room.moves)) for room in rooms]
    server_s, redis_s = cost(drawn)
    measured_moves = float(run["moves"])
    # the measured run's moves, shared over its rooms in proportion to the drawn ones
    share = [measured_moves * d / max(1.0, sum(drawn)) for d in drawn]
    server_counts_s, redis_counts_s = cost(share)
    return {
        "predicted_moves": predicted_moves,
        "server_cpu_s": round(server_s, 4),
        "redis_cpu_s": round(redis_s, 4),
        "server_cpu_s_on_measured_moves": round(server_counts_s, 4),
        "redis_cpu_s_on_measured_moves": round(redis_counts_s, 4),
    }


def validation(units: UnitCosts, data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Predicted against measured, for every validation run in measure.py's output."""
    rows = []
    for run in data.get("validation_runs", []):
        predicted = predict_run(units, run)
        counters = run["counters"]
        rows.append(
            {
                "name": run["name"],
                "instances": run["instances"],
                "rooms": run["rooms"],
                "sizes": run["sizes"],
                "spectators_per_room": run.get("spectators_per_room", 1),
                "moves": run["moves"],
                "measured": {
                    "server_cpu_s": round(counters["server_cpu_s"], 4),
                    "redis_cpu_s": round(counters["redis_cpu_s"], 4),
                },
                "predicted": predicted,
                "ratio_server": round(predicted["server_cpu_s"] / counters["server_cpu_s"], 3),
                "ratio_server_on_measured_moves": round(
                    predicted["server_cpu_s_on_measured_moves"] / counters["server_cpu_s"], 3
                ),
                "ratio_redis": round(predicted["redis_cpu_s"] / counters["redis_cpu_s"], 3),
            }
        )
    return rows


# -- output ----------------------------------------------------------------------------------------


def table(rows: list[Plan]) -> str:
    """The plans as a Markdown table (docs/capacity.md)."""
    header = (
        "| concurrent players | placement | player-games/day | moves/s | instances (bound) | holders/room "
        "| Redis shards (bound) | Redis cmd/s | PG commits/s | PG WAL MB/s | PG cores | PG GB (30 d) "
        "| WS out MB/s | first bottleneck | nearest wall (share of its limit) |"
    )
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for p in rows:
        shards = "does not fit" if p.redis_shards < 0 else str(p.redis_shards)
        lines.append(
            f"| {p.players:,} | {p.placement} | {p.player_games_per_day:,} | {p.moves_s:,} | {p.instances:,} "
            f"({p.instance_bound}) | {p.holders_per_room} | {shards} ({p.redis_bound}) | {p.redis_commands_s:,} "
            f"| {p.pg_commits_s:,} | {p.pg_wal_mb_s} | {p.pg_cores} | {p.pg_storage_gb:,} | {p.ws_out_mb_s} "
            f"| {p.first_bottleneck} | {p.nearest_wall} ({p.nearest_wall_use:.0%}) |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=Path, default=UNITS)
    parser.add_argument("--players", type=int, nargs="+", default=list(TARGETS))
    parser.add_argument(
        "--placement", choices=["spread", "routed", "room"], nargs="+", default=["spread", "routed", "room"]
    )
    parser.add_argument("--think-scale", type=float, default=1.0, help="think times × this (1: the bots')")
    parser.add_argument("--sample", type=int, default=300, help="players at the peak in the simulated sample")
    parser.add_argument("--validate", action="store_true", help=f"write {VALIDATION.name} from the units' runs")
    parser.add_argument("--json", action="store_true", help="print the plans as JSON")
    args = parser.parse_args(argv)
    try:
        data = json.loads(args.units.read_text())
        units = UnitCosts.from_json(data)
        if args.validate:
            rows = validation(units, data)
            VALIDATION.write_text(json.dumps({"units": args.units.name, "runs": rows}, indent=1) + "\n")
            print(json.dumps(rows, indent=1))
            return 0
        machines = Machines()
        out: list[Plan] = []
        for placement in args.placement:
            load = LoadModel(placement=placement, think_scale=args.think_scale)
            out += plans(units, load, machines, args.players, sample_players=args.sample)
    except (OSError, json.JSONDecodeError, ModelError) as exc:
        print(f"model.py: {exc}", file=sys.stderr)
        return 2
    print(json.dumps([asdict(p) for p in out], indent=1) if args.json else table(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
