"""The game-like ceiling for ``bench/load.py``: a bare aiohttp server that speaks just enough of
Half Moon's protocol for the load client, and does what any game server must per move and
nothing more — parse the JSON, find the room (a dict lookup), answer the mover, fan a summary
out to the room mates and the spectators.

No rules engine (every move is taken), no room log (nothing is durable), no clocks, splits,
tokens, audiences or metrics; the mover's answer carries no ``changes``, and spectators get the
room mates' summary. It writes each frame at once, where the real server gathers a
connection's frames into one write per loop turn. So it is a rough ceiling, not an exact one:
what the real server spends per move above it is about what its rules, its durability and its
bookkeeping cost (the project's perf notes measured such a server at about 0.47x the echo
ceiling's messages at 1,000 connections).

Run by ``load.py`` (``--only gamelike-1k``, and in ``--matrix``); by hand:
``python bench/gamelike.py PORT``.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass, field

import orjson
from aiohttp import WSMsgType, web

#: a game is over after this many moves (the load client plays 48-move winning lines)
MOVES_TO_WIN = 48


@dataclass(eq=False)
class Member:
    ws: web.WebSocketResponse
    name: str
    moves: int = 0
    done: bool = False


@dataclass(eq=False)
class Room:
    id: str
    code: str
    players: dict[str, Member] = field(default_factory=dict)  # player id → member
    spectators: list[web.WebSocketResponse] = field(default_factory=list)
    seq: int = 0


class GameLike:
    def __init__(self) -> None:
        self.rooms: dict[str, Room] = {}
        self.ids = itertools.count(1)

    async def create_room(self, request: web.Request) -> web.Response:
        body = await request.json()
        room = Room(f"G{next(self.ids):07d}", str(body.get("code", "")))
        self.rooms[room.id] = room
        return web.json_response({"room": room.id})

    async def websocket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(compress=False)
        await ws.prepare(request)
        room: Room | None = None
        me: str | None = None
        async for msg in ws:
            if msg.type is not WSMsgType.TEXT:
                continue
            data = orjson.loads(msg.data)
            kind = data["type"]
            if kind == "move" and room is not None and me is not None:
                member = room.players[me]
                member.moves += 1
                room.seq += 1
                summary = {"player": me, "action": "move", "score": 10 * member.moves, "moves": member.moves,
                           "cards_left": 104 - 2 * member.moves, "status": "playing", "elapsed_ms": 0,
                           "type": "moved", "seq": room.seq, "v": 1}  # fmt: skip
                others = orjson.dumps(summary)
                own = orjson.dumps({**summary, "positions": data["positions"], "id": data.get("id")})
                await ws.send_str(own.decode())
                text = others.decode()
                for pid, mate in room.players.items():
                    if pid != me and not mate.ws.closed:
                        await mate.ws.send_str(text)
                for spectator in room.spectators:
                    if not spectator.closed:
                        await spectator.send_str(text)
                if member.moves >= MOVES_TO_WIN:
                    member.done = True
                    over = {"type": "game_over", "outcome": "won", "game": f"{room.id}-{me}", "v": 1}
                    await ws.send_str(orjson.dumps(over).decode())
                    if all(m.done for m in room.players.values()):
                        race_over = orjson.dumps({"type": "race_over", "v": 1}).decode()
                        for mate in room.players.values():
                            await mate.ws.send_str(race_over)
            elif kind == "join":
                room = self.rooms[data["room"]]
                me = f"p{len(room.players) + 1}"
                room.players[me] = Member(ws, str(data.get("name")))
                await ws.send_str(orjson.dumps({"type": "welcome", "room": room.id, "player": me, "v": 1}).decode())
            elif kind == "watch":
                room = self.rooms[data["room"]]
                room.spectators.append(ws)
                await ws.send_str(orjson.dumps({"type": "welcome", "room": room.id, "v": 1}).decode())
            elif kind == "start" and room is not None:
                started = orjson.dumps({"type": "started", "code": room.code, "v": 1}).decode()
                for mate in room.players.values():
                    await mate.ws.send_str(started)
            elif kind == "leave" and room is not None:
                if me is not None:
                    room.players.pop(me, None)
                elif ws in room.spectators:
                    room.spectators.remove(ws)
                if not room.players:
                    self.rooms.pop(room.id, None)
                room, me = None, None
        if room is not None and me is not None:
            room.players.pop(me, None)
        return ws


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


def make_app() -> web.Application:
    server = GameLike()
    app = web.Application()
    app.router.add_post("/api/rooms", server.create_room)
    app.router.add_get("/ws", server.websocket)
    app.router.add_get("/healthz", healthz)
    return app


def main(port: int) -> None:
    web.run_app(make_app(), host="127.0.0.1", port=port, print=None, access_log=None)


if __name__ == "__main__":
    main(int(sys.argv[1]))
