"""Live state in this process: the rooms and the seats (player tokens), in dictionaries.

The embedded default and the tests use it; it is :class:`halfmoon_server.ports.LiveState`.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

from halfmoon.protocol import ROOM_ALPHABET, ROOM_ID_LENGTH
from halfmoon_server.ports import Seat
from halfmoon_server.room import Room


class LocalLiveState:
    """Every room of this process and the seats of their players."""

    def __init__(self) -> None:
        self.rooms: dict[str, Room] = {}
        self.seats: dict[str, Seat] = {}

    def new_room_id(self) -> str:
        while True:
            room_id = "".join(secrets.choice(ROOM_ALPHABET) for _ in range(ROOM_ID_LENGTH))
            if room_id not in self.rooms:
                return room_id

    def add(self, room: Room) -> None:
        self.rooms[room.id] = room

    def get(self, room_id: str) -> Room | None:
        return self.rooms.get(room_id)

    def drop(self, room: Room) -> None:
        self.rooms.pop(room.id, None)
        for token in room.tokens.values():
            self.seats.pop(token, None)

    def __len__(self) -> int:
        return len(self.rooms)

    def __iter__(self) -> Iterator[Room]:
        return iter(list(self.rooms.values()))

    def seat(self, token: str) -> Seat | None:
        return self.seats.get(token)

    def add_seat(self, token: str, seat: Seat) -> None:
        self.seats[token] = seat

    def forget_seat(self, token: str) -> None:
        self.seats.pop(token, None)
