"""The Half Moon terminal client on ``websockets``: race and spectate from a terminal, and bots.

The layers, from the wire inwards:

- :mod:`halfmoon_client.connection` — the only module that opens sockets: connect, send,
  receive, reconnect with backoff and resume with the player's token;
- :mod:`halfmoon_client.rest` — ``POST /api/rooms`` (create a room);
- :mod:`halfmoon_client.session` — the sans-I/O protocol core: a state machine fed with decoded
  server messages, producing the messages to send and the view model the screens draw;
- :mod:`halfmoon_client.commands` and :mod:`halfmoon_client.screens` — input parsing and
  rendering, pure functions;
- :mod:`halfmoon_client.strategy` — how bots choose a move from the board they can see;
- :mod:`halfmoon_client.terminal`, :mod:`halfmoon_client.bots` and :mod:`halfmoon_client.cli`
  — the ``halfmoon join``, ``watch``, ``race`` and ``bot`` commands.

It shares the engine (:mod:`halfmoon`) and the wire protocol (``docs/protocol.md``) with the
server, and nothing else.
"""

__all__: list[str] = []
