"""A daily attempt's room opens its code when the daily service publishes the day's: never
sooner, even for an attempt the lobby gave a shorter limit (begun after midnight)."""

from __future__ import annotations

import logging
from datetime import date
from typing import Any

import pytest

from halfmoon_server.clock import ManualClock, day_start_ms
from halfmoon_server.errors import StorageError
from halfmoon_server.rooms.lobby import UNSURE_CLAIMS, UNSURE_ROOMS_A_CLAIM
from halfmoon_server.web import keys
from tests.server.conftest import StartServer
from tests.server.support import WsClient

DAY = date(2026, 11, 28)  # the day of support.T0


async def test_a_late_daily_attempt_opens_its_code_when_the_day_does(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server(daily_time_limit_s=600)
    storage = server.app[keys.STORAGE]
    real_claim = storage.claim_daily_attempt

    async def slow_claim(*args: Any, **kwargs: Any) -> bool:
        clock.advance(5_000)  # the database took five seconds: the attempt begins after midnight
        return await real_claim(*args, **kwargs)

    storage.claim_daily_attempt = slow_claim  # type: ignore[method-assign]
    clock.set(day_start_ms(date(2026, 11, 29)) - 100)
    client = await WsClient.connect(server, "late")
    await client.send("daily", name="Late")
    welcome = await client.next("welcome")
    await client.close()
    race = server.app[keys.LOBBY].rooms[welcome["room"]["room"]].race
    published = server.app[keys.DAILY].reveal_at(DAY)
    assert race.time_limit_s is not None and race.time_limit_s < 600  # shortened: it ends by then
    assert race.reveal_at() == published
    assert race.snapshot("p1", published - 1_000, watcher=False).code is None


async def test_a_daily_attempt_set_up_across_its_days_reveal_is_refused_and_leaves_no_room(
    start_server: StartServer, clock: ManualClock
) -> None:
    """Asked for just before midnight, with a database so slow that the day's code is published
    (midnight + the daily time limit) before the attempt starts: it would start on a code anyone
    can read, so it is refused (a clear 'ask again'), and the room made for it goes."""
    server = await start_server(daily_time_limit_s=60)
    storage = server.app[keys.STORAGE]
    real_claim = storage.claim_daily_attempt

    async def slow_claim(*args: Any, **kwargs: Any) -> bool:
        clock.advance(61_000)  # the database took a minute: the day's code is public by then
        return await real_claim(*args, **kwargs)

    storage.claim_daily_attempt = slow_claim  # type: ignore[method-assign]
    clock.set(day_start_ms(date(2026, 11, 29)) - 100)
    client = await WsClient.connect(server, "late")
    await client.send("daily", name="Late")
    error = await client.next("error")
    await client.close()
    assert error["code"] == "unavailable" and "ask for it again" in error["message"]
    assert server.app[keys.LOBBY].rooms == {}


async def test_a_daily_attempt_the_database_cannot_record_is_unavailable_in_one_log_line_and_leaves_no_room(
    start_server: StartServer, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start_server()
    storage = server.app[keys.STORAGE]
    real_claim = storage.claim_daily_attempt
    down = True

    async def claim(*args: Any, **kwargs: Any) -> bool:
        if down:
            raise StorageError("the database did not answer within 3 s")
        return await real_claim(*args, **kwargs)

    storage.claim_daily_attempt = claim  # type: ignore[method-assign]
    client = await WsClient.connect(server, "ada")
    await client.send("daily", name="Ada")
    error = await client.next("error")
    assert error["code"] == "unavailable" and "try again" in error["message"]
    assert server.app[keys.LOBBY].rooms == {}, "the room made for the attempt goes"
    said = [r for r in caplog.records if "daily attempt could not be set up" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.WARNING and said[0].exc_info is None
    assert "did not answer" in said[0].getMessage()
    down = False
    await client.send("daily", name="Ada")  # the same connection asks again: ranked, nothing was spent
    welcome = await client.next("welcome")
    assert welcome["ranked"] is True
    await client.close()


def _claims_answering(storage: Any, answers: list[str]) -> None:
    """Replace ``storage``'s daily claim by one that, for each answer in turn, records the claim
    and loses its answer (``"lost"``), fails before recording it (``"down"``) or answers (``"ok"``)."""
    real_claim = storage.claim_daily_attempt

    async def claim(*args: Any, **kwargs: Any) -> bool:
        answer = answers.pop(0) if answers else "ok"
        if answer == "down":
            raise StorageError("the database did not answer within 3 s")
        ranked: bool = await real_claim(*args, **kwargs)  # committed…
        if answer == "lost":  # …but its answer was lost (the call's time limit struck during the commit)
            raise StorageError("the database did not answer within 3 s")
        return ranked

    storage.claim_daily_attempt = claim


@pytest.mark.parametrize("answers", [["lost"], ["lost", "down"], ["down", "lost", "lost"]])
async def test_a_daily_attempt_recorded_before_the_database_failed_is_still_ranked_when_asked_again(
    start_server: StartServer, answers: list[str]
) -> None:
    """The claim the database recorded without answering is found again: nobody saw a card of its
    room (dropped at once), so asked again it is the same attempt, ranked as it was — however
    many tries failed before the one that answers, recorded or not."""
    server = await start_server(room_burst=10)  # each ask spends a room credit, failed or not
    _claims_answering(server.app[keys.STORAGE], list(answers))
    client = await WsClient.connect(server, "ada")
    for _ in answers:
        await client.send("daily", name="Ada")
        error = await client.next("error")
        assert error["code"] == "unavailable" and "try again" in error["message"]
        assert server.app[keys.LOBBY].rooms == {}
    await client.send("daily", name="Ada")  # what the terminal client does at once for 'unavailable'
    welcome = await client.next("welcome")
    assert welcome["ranked"] is True, welcome.get("unranked_reason")
    await client.close()
    # it is the name's attempt of the day: asked once more (another tab), the next is not ranked
    second = await WsClient.connect(server, "ada-again")
    await second.send("daily", name="Ada")
    again = await second.next("welcome")
    await second.close()
    assert again["ranked"] is False and again["unranked_reason"] == "daily_retry"


async def test_a_lost_daily_claim_is_spent_once_the_same_name_was_played_from_another_address(
    start_server: StartServer,
) -> None:
    """Somebody else played 'Ada' (unranked, the name's claim is taken) and saw the cards: the lost
    claim is not handed back to its address either — the name's attempt has been looked at."""
    server = await start_server(trust_forwarded=True)
    _claims_answering(server.app[keys.STORAGE], ["lost"])
    first = await WsClient.connect(server, "ada", headers={"X-Forwarded-For": "203.0.113.7"})
    await first.send("daily", name="Ada")
    assert (await first.next("error"))["code"] == "unavailable"
    other = await WsClient.connect(server, "ada2", headers={"X-Forwarded-For": "198.51.100.9"})
    await other.send("daily", name="Ada")
    assert (await other.next("welcome"))["ranked"] is False, "the name's claim stays the first address's"
    await first.send("daily", name="Ada")
    assert (await first.next("welcome"))["ranked"] is False
    for client in (first, other):
        await client.close()


async def test_a_lost_daily_claim_is_spent_once_another_name_was_played_from_its_address(
    start_server: StartServer,
) -> None:
    """With one ranked attempt an address, 'Eve' is lost and 'Mallory' from the same address plays
    unranked, seeing the cards: 'Eve' asked again is not ranked."""
    server = await start_server(daily_ranked_per_address=1)
    _claims_answering(server.app[keys.STORAGE], ["lost"])
    eve = await WsClient.connect(server, "eve")
    await eve.send("daily", name="Eve")
    assert (await eve.next("error"))["code"] == "unavailable"
    mallory = await WsClient.connect(server, "mallory")
    await mallory.send("daily", name="Mallory")
    assert (await mallory.next("welcome"))["ranked"] is False  # the address's ranked attempt is Eve's
    await eve.send("daily", name="Eve")
    again = await eve.next("welcome")
    for client in (eve, mallory):
        await client.close()
    assert again["ranked"] is False


async def test_lost_daily_claims_are_remembered_for_their_day_only(
    start_server: StartServer, clock: ManualClock
) -> None:
    server = await start_server()
    _claims_answering(server.app[keys.STORAGE], ["lost", "lost"])
    lobby = server.app[keys.LOBBY]
    client = await WsClient.connect(server, "ada")
    await client.send("daily", name="Ada")
    assert (await client.next("error"))["code"] == "unavailable"
    assert [c[0] for c in lobby._unsure_claims] == [DAY]
    clock.set(day_start_ms(date(2026, 11, 29)) + 1_000)
    await client.send("daily", name="Bea")
    assert (await client.next("error"))["code"] == "unavailable"
    assert [(c[0], c[1]) for c in lobby._unsure_claims] == [(date(2026, 11, 29), "bea")], "yesterday's is gone"
    await client.close()


async def test_lost_daily_claims_are_remembered_up_to_their_bounds(start_server: StartServer) -> None:
    """The lobby keeps the newest UNSURE_CLAIMS lost claims of the day, each with its newest
    UNSURE_ROOMS_A_CLAIM dropped rooms: no client can grow it past them."""
    server = await start_server()
    lobby = server.app[keys.LOBBY]
    for n in range(UNSURE_CLAIMS + 5):
        lobby._remember_unsure_claim((DAY, f"name-{n}", "addr", None), f"R{n}")
    claims = list(lobby._unsure_claims)
    assert len(claims) == UNSURE_CLAIMS and claims[-1][1] == f"name-{UNSURE_CLAIMS + 4}"
    assert claims[0][1] == "name-5", "the oldest went first"
    for n in range(UNSURE_ROOMS_A_CLAIM + 3):
        lobby._remember_unsure_claim((DAY, "ada", "addr", None), f"A{n}")
    rooms = lobby._unsure_claims[(DAY, "ada", "addr", None)]
    assert rooms == tuple(f"A{n}" for n in range(3, UNSURE_ROOMS_A_CLAIM + 3))
    assert len(lobby._unsure_claims) == UNSURE_CLAIMS
