"""Server URLs, room ids and room links."""

from __future__ import annotations

import re

import pytest

from halfmoon_client.address import normalize_server, parse_room, parse_room_or_link, websocket_url
from halfmoon_client.errors import AddressError

DEFAULT = "http://127.0.0.1:8080"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("K7WQ2M", (DEFAULT, "K7WQ2M")),
        (" k7wq2m ", (DEFAULT, "K7WQ2M")),
        ("http://127.0.0.1:9000/r/K7WQ2M", ("http://127.0.0.1:9000", "K7WQ2M")),
        ("https://hm.example/?room=k7wq2m", ("https://hm.example", "K7WQ2M")),
        ("https://hm.example/#/room/K7WQ2M", ("https://hm.example", "K7WQ2M")),
    ],
)
def test_room_ids_and_links(text: str, expected: tuple[str, str]) -> None:
    assert parse_room_or_link(text, default_server=DEFAULT) == expected


@pytest.mark.parametrize("text", ["K7WQ2", "K7WQ2MM", "K7WQ2I", "http://hm.example/r/", "ftp://x/K7WQ2M"])
def test_bad_rooms_are_refused_with_the_input_quoted(text: str) -> None:
    with pytest.raises(AddressError, match=re.escape(repr(text))):
        parse_room_or_link(text, default_server=DEFAULT)


def test_server_urls() -> None:
    assert normalize_server("127.0.0.1:8080/") == "http://127.0.0.1:8080"
    assert websocket_url("http://h:1") == "ws://h:1/ws"
    assert websocket_url("https://h") == "wss://h/ws"
    with pytest.raises(AddressError, match="bad port"):
        normalize_server("http://h:99999")
    with pytest.raises(AddressError):
        parse_room("")


def test_the_websocket_url_of_a_room_names_it_for_a_balancer_to_route_on() -> None:
    assert websocket_url("http://h:1", room=" k7wq2m") == "ws://h:1/ws?room=K7WQ2M"
    assert websocket_url("https://h/", room="K7WQ2M") == "wss://h/ws?room=K7WQ2M"
    assert websocket_url("https://h", room=None) == "wss://h/ws"
    for bad in ("K7WQ2", "K7WQ2M&x=1", "K7 WQ2M"):  # nothing but a room id reaches the URL
        with pytest.raises(AddressError, match="not a room id"):
            websocket_url("http://h:1", room=bad)
