"""Every accounts store (memory, SQLite, PostgreSQL) keeps the same promises: a token is taken once,
for its purpose, within its time; a name's skeleton belongs to one account; a player key to one
account; revoking a passkey ends the sessions it signed in; an expired session is no session."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from halfmoon_server.adapters.accounts import MemoryAccounts, SqlAccounts, accounts_for
from halfmoon_server.adapters.storage import open_storage
from halfmoon_server.core.accounts import DEVICE_LINK, SIGN_IN, Account, Passkey, Session
from halfmoon_server.ports import Accounts


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def any_accounts(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Accounts]:
    if request.param == "memory":
        url = "memory://"
    elif request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'halfmoon.db'}"
    else:
        url = request.getfixturevalue("pg_database")
    storage = await open_storage(url)
    accounts = accounts_for(storage)
    assert isinstance(accounts, MemoryAccounts if request.param == "memory" else SqlAccounts)
    yield accounts
    await storage.close()


def passkey(credential: str, account: str = "acc1") -> Passkey:
    return Passkey(credential, account, b"\x01cose", 0, "phone", 1000, None)


def session(sid: str, passkey_id: str | None, *, account: str = "acc1", expires: int = 10_000) -> Session:
    return Session(sid, f"hash-{sid}", account, passkey_id, None, "device", 1000, expires)


async def test_a_token_is_taken_once_for_its_purpose_and_within_its_time(any_accounts: Accounts) -> None:
    await any_accounts.put_token("t1", SIGN_IN, {"challenge": "abc"}, 5000)
    assert await any_accounts.take_token("t1", SIGN_IN, 4000) == {"challenge": "abc"}
    assert await any_accounts.take_token("t1", SIGN_IN, 4000) is None
    await any_accounts.put_token("t2", SIGN_IN, {"challenge": "abc"}, 5000)
    assert await any_accounts.take_token("t2", DEVICE_LINK, 4000) is None  # another purpose: gone all the same
    assert await any_accounts.take_token("t2", SIGN_IN, 4000) is None
    await any_accounts.put_token("t3", DEVICE_LINK, {"account": "acc1"}, 5000)
    assert await any_accounts.take_token("t3", DEVICE_LINK, 5001) is None


async def test_a_names_skeleton_and_a_player_key_belong_to_one_account(any_accounts: Accounts) -> None:
    assert await any_accounts.create_account(Account("acc1", "Ada", "ada", 1000), passkey("pk1"))
    assert not await any_accounts.create_account(Account("acc2", "ADA", "ada", 1000), passkey("pk2", "acc2"))
    assert await any_accounts.account("acc2") is None and await any_accounts.passkey("pk2") is None
    assert (await any_accounts.account_of_name("ada")) == Account("acc1", "Ada", "ada", 1000)
    assert await any_accounts.create_account(Account("acc2", "Bo", "bo", 1000), passkey("pk2", "acc2"))
    assert await any_accounts.link_player("acc1", "p" * 64, 1000)
    assert await any_accounts.link_player("acc1", "p" * 64, 2000)  # again: nothing changes
    assert not await any_accounts.link_player("acc2", "p" * 64, 2000)
    assert await any_accounts.players_of("acc1") == ["p" * 64]
    assert await any_accounts.players_of("acc2") == []


async def test_revoking_a_passkey_ends_its_sessions_and_an_expired_session_is_none(any_accounts: Accounts) -> None:
    assert await any_accounts.create_account(Account("acc1", "Ada", "ada", 1000), passkey("pk1"))
    await any_accounts.add_passkey(passkey("pk2"))
    await any_accounts.passkey_used("pk2", 7, 3000)
    held = await any_accounts.passkey("pk2")
    assert held is not None and (held.sign_count, held.used_ms) == (7, 3000)
    for sid, key in (("s1", "pk1"), ("s2", "pk2"), ("s3", None)):
        await any_accounts.add_session(session(sid, key))
    assert not await any_accounts.revoke_passkey("acc2", "pk1")  # not that account's
    assert await any_accounts.revoke_passkey("acc1", "pk1")
    assert [p.id for p in await any_accounts.passkeys_of("acc1")] == ["pk2"]
    assert await any_accounts.session("hash-s1", 2000) is None
    assert [s.id for s in await any_accounts.sessions_of("acc1", 2000)] == ["s2", "s3"]
    assert not await any_accounts.end_session("acc2", "s2")
    assert await any_accounts.end_session("acc1", "s2")
    assert not await any_accounts.end_session("acc1", "s2")
    assert await any_accounts.session("hash-s3", 9_999) is not None
    assert await any_accounts.session("hash-s3", 10_000) is None
    assert await any_accounts.sessions_of("acc1", 10_000) == []


async def test_of_many_takers_of_one_token_at_once_exactly_one_gets_it(any_accounts: Accounts) -> None:
    for round_ in range(5):
        await any_accounts.put_token(f"race{round_}", SIGN_IN, {"challenge": "abc"}, 5000)
        taken = await asyncio.gather(*(any_accounts.take_token(f"race{round_}", SIGN_IN, 4000) for _ in range(8)))
        assert sum(1 for t in taken if t is not None) == 1, taken
