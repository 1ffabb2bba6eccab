"""The room log's entries, typed: one frozen class per kind, with named fields for the one-letter
keys (:mod:`halfmoon_server.core.commands` documents each key).

These classes are the log's schema and its validated view: :func:`parse_entry` reads an entry as
the log holds it (a dict) into its class, refusing an unknown kind or a malformed entry with
``bad_message`` (never a ``KeyError`` or ``TypeError``); :meth:`LogEntry.to_json` gives back the
same keys and values — for the entries of this release and of the previous one (its legacy keys:
``tok``, a rematch's ``c`` and ``salt``, a recorded game's ``a``). Key *order* may differ: the
log stores what the room appended, unchanged, and these classes never rewrite it.

The room applies the log's dicts directly (a move is the hot path: no parse there);
``apply_entry(race, entry.to_json())`` runs a typed entry.

>>> entry = parse_entry({"k": "move", "p": "p1", "t": 5, "m": ["8", "12"], "o": "i3:17", "id": 2})
>>> entry
Move(time=5, player='p1', origin='i3:17', message_id=2, holder=None, null_keys=frozenset(), positions=('8', '12'))
>>> entry.to_json() == {"k": "move", "p": "p1", "t": 5, "m": ["8", "12"], "o": "i3:17", "id": 2}
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from halfmoon_server.errors import Refusal


def _key(key: str, *, default: Any = None, required: bool = False) -> Any:
    """A field stored under the log key ``key`` (absent from the entry: ``default``, None)."""
    if required:
        return field(metadata={"key": key})
    return field(default=default, metadata={"key": key})


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEntry:
    """What every entry may hold: its time ``t`` (epoch ms, always there once logged), the
    player ``p`` (absent for the room's own commands), its origin ``o`` (instance and
    connection), the client's message id ``id`` and the connection holding a seat or a watch
    ``h``. ``null_keys``: the keys the entry holds as JSON null (``to_json`` gives them back)."""

    kind: ClassVar[str] = ""
    #: groups of keys of which one group must be there whole (e.g. a join's ``th`` or ``tok``)
    one_of: ClassVar[tuple[tuple[str, ...], ...]] = ()

    time: int = _key("t", required=True)
    player: str | None = _key("p")
    origin: str | None = _key("o")
    message_id: int | None = _key("id")
    holder: str | None = _key("h")
    null_keys: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, Any]:
        """The entry as the log holds it: ``k`` and every key present (a move's positions as a
        list)."""
        out: dict[str, Any] = {"k": self.kind}
        for attr, key, _types, _required in _FIELDS[type(self)]:
            value = getattr(self, attr)
            if value is not None:
                out[key] = list(value) if key == "m" else value
            elif key in self.null_keys:
                out[key] = None
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Move(LogEntry):
    kind = "move"
    positions: tuple[str, ...] = _key("m", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class Undo(LogEntry):
    kind = "undo"


@dataclass(frozen=True, slots=True, kw_only=True)
class Tick(LogEntry):
    kind = "tick"


@dataclass(frozen=True, slots=True, kw_only=True)
class Join(LogEntry):
    kind = "join"
    one_of = (("th",), ("tok",))
    name: str = _key("n", required=True)
    token_hash: str | None = _key("th")
    token: str | None = _key("tok")  # (logs written before tokens were hashed)
    player_key: str | None = _key("pk")
    bot: bool | None = _key("bot")
    entropy: str | None = _key("e")


@dataclass(frozen=True, slots=True, kw_only=True)
class Single(LogEntry):
    kind = "single"
    one_of = (("th",), ("tok",))
    name: str = _key("n", required=True)
    token_hash: str | None = _key("th")
    token: str | None = _key("tok")
    player_key: str | None = _key("pk")
    ranked: bool | None = _key("r")
    time_limit_s: int | None = _key("lim")
    bot: bool | None = _key("bot")


@dataclass(frozen=True, slots=True, kw_only=True)
class Watch(LogEntry):
    kind = "watch"


@dataclass(frozen=True, slots=True, kw_only=True)
class Unwatch(LogEntry):
    kind = "unwatch"


@dataclass(frozen=True, slots=True, kw_only=True)
class Connect(LogEntry):
    kind = "connect"
    since: int | None = _key("since")
    entropy: str | None = _key("e")


@dataclass(frozen=True, slots=True, kw_only=True)
class Present(LogEntry):
    kind = "present"


@dataclass(frozen=True, slots=True, kw_only=True)
class Disconnect(LogEntry):
    kind = "disconnect"


@dataclass(frozen=True, slots=True, kw_only=True)
class Leave(LogEntry):
    kind = "leave"


@dataclass(frozen=True, slots=True, kw_only=True)
class Start(LogEntry):
    kind = "start"
    time_limit_s: int | None = _key("lim")
    series: int | None = _key("ser")


@dataclass(frozen=True, slots=True, kw_only=True)
class Rematch(LogEntry):
    kind = "rematch"
    one_of = (("seed",), ("c", "salt"))
    seed: str | None = _key("seed")
    entropy: str | None = _key("e")
    code: str | None = _key("c")  # (the previous release: the next deal itself, and its salt)
    salt: str | None = _key("salt")


@dataclass(frozen=True, slots=True, kw_only=True)
class Accept(LogEntry):
    kind = "accept"
    entropy: str | None = _key("e")


@dataclass(frozen=True, slots=True, kw_only=True)
class GiveUp(LogEntry):
    kind = "give_up"


@dataclass(frozen=True, slots=True, kw_only=True)
class Abandon(LogEntry):
    kind = "abandon"


@dataclass(frozen=True, slots=True, kw_only=True)
class Recorded(LogEntry):
    kind = "recorded"
    game_id: str | None = _key("g")
    stored: bool | None = _key("s")  # (older logs: the database had it when it was recorded)
    analysis: dict[str, Any] | None = field(default=None, metadata={"key": "a"})  # (old logs: ignored)


@dataclass(frozen=True, slots=True, kw_only=True)
class Stored(LogEntry):
    kind = "stored"
    game_id: str | None = _key("g")


#: Every entry class, by kind (the registry, :data:`~halfmoon_server.core.commands.COMMANDS`,
#: holds the same kinds).
ENTRY_CLASSES: dict[str, type[LogEntry]] = {
    cls.kind: cls
    for cls in (
        Move, Undo, Tick, Join, Single, Watch, Unwatch, Connect, Present, Disconnect, Leave,
        Start, Rematch, Accept, GiveUp, Abandon, Recorded, Stored,
    )
}  # fmt: skip

#: what each log key's value must be (bool is not an int here)
_TYPES: dict[str, type] = {
    "t": int, "p": str, "o": str, "id": int, "h": str, "m": list, "n": str, "th": str, "tok": str,
    "pk": str, "lim": int, "g": str, "s": bool, "r": bool, "bot": bool, "ser": int, "e": str,
    "seed": str, "c": str, "salt": str, "since": int, "a": dict,
}  # fmt: skip

#: each class's fields: (attribute, log key, type, required)
_FIELDS: dict[type[LogEntry], tuple[tuple[str, str, type, bool], ...]] = {
    cls: tuple(
        (f.name, f.metadata["key"], _TYPES[f.metadata["key"]], f.default is dataclasses.MISSING)
        for f in dataclasses.fields(cls)
        if "key" in f.metadata
    )
    for cls in ENTRY_CLASSES.values()
}


def _bad(kind: object, why: str) -> Refusal:
    return Refusal("bad_message", f"malformed log entry {kind!r}: {why}")


def parse_entry(data: object) -> LogEntry:
    """An entry as the log holds it, read into its class. Raises :class:`Refusal`
    (``bad_message``) for anything else: not an object, an unknown kind, a key the kind does not
    have, a required key missing (``t``, a move's ``m``, a join's ``n`` and ``th`` or ``tok``, …),
    a value of the wrong type."""
    if not isinstance(data, Mapping):
        raise Refusal("bad_message", f"a log entry is an object, not {type(data).__name__}")
    kind = data.get("k")
    cls = ENTRY_CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise Refusal("bad_message", f"no room command {kind!r}")
    fields = _FIELDS[cls]
    known = {key for _attr, key, _types, _required in fields}
    unknown = sorted(str(key) for key in data if key != "k" and key not in known)
    if unknown:
        raise _bad(kind, f"unknown key {', '.join(map(repr, unknown))}")
    values: dict[str, Any] = {}
    nulls: set[str] = set()
    for attr, key, want, required in fields:
        if key not in data:
            if required:
                raise _bad(kind, f"{key!r} is missing")
            continue
        value = data[key]
        if value is None:
            if required:
                raise _bad(kind, f"{key!r} is null")
            nulls.add(key)
            continue
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise _bad(kind, f"{key!r} must be {want.__name__}, not {type(value).__name__}")
        if isinstance(value, list):  # a move's positions
            if not all(isinstance(position, str) for position in value):
                raise _bad(kind, "'m' must be a list of positions (strings)")
            value = tuple(value)
        values[attr] = value
    if cls.one_of and not any(all(data.get(key) is not None for key in group) for group in cls.one_of):
        wanted = " or ".join("+".join(map(repr, group)) for group in cls.one_of)
        raise _bad(kind, f"needs {wanted}")
    return cls(null_keys=frozenset(nulls), **values)
