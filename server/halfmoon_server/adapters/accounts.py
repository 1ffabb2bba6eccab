"""Accounts' storage: :class:`SqlAccounts` implements :class:`halfmoon_server.ports.Accounts` in the
SQL storage's database (the tables of migration 0009, through the storage's engine and time limit),
:class:`MemoryAccounts` in dictionaries (beside ``memory://``); :func:`accounts_for` picks the one
that goes with a storage.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError

from halfmoon_server.adapters.memory_storage import MemoryStorage
from halfmoon_server.adapters.models import (
    AccountPlayerRow,
    AccountRow,
    AccountSessionRow,
    AccountTokenRow,
    PasskeyRow,
)
from halfmoon_server.adapters.storage import SqlStorage
from halfmoon_server.core.accounts import Account, Passkey, Session
from halfmoon_server.ports import Accounts, Storage

__all__ = ["MemoryAccounts", "SqlAccounts", "accounts_for"]


def accounts_for(storage: Storage) -> Accounts:
    """The accounts kept beside ``storage``: in its SQL database, else in memory (the player keys
    they link shared with a :class:`MemoryStorage`, whose ratings rate an account as one)."""
    if isinstance(storage, SqlStorage):
        return SqlAccounts(storage)
    return MemoryAccounts(players=storage.account_players if isinstance(storage, MemoryStorage) else None)


def _account(row: AccountRow) -> Account:
    return Account(row.id, row.name, row.name_key, row.created_ms)


def _passkey(row: PasskeyRow) -> Passkey:
    return Passkey(row.id, row.account_id, row.public_key, row.sign_count, row.label, row.created_ms, row.used_ms)


def _session(row: AccountSessionRow) -> Session:
    return Session(
        row.id, row.secret_hash, row.account_id, row.passkey, row.player, row.label, row.created_ms, row.expires_ms
    )


class SqlAccounts:
    """:class:`~halfmoon_server.ports.Accounts` in the SQL storage's database: every call within the
    storage's time limit, failures as :class:`~halfmoon_server.errors.StorageError`."""

    def __init__(self, storage: SqlStorage) -> None:
        self._storage = storage
        self._sessions = storage.sessions

    async def put_token(self, token_hash: str, purpose: str, data: dict[str, Any], expires_ms: int) -> None:
        async def insert() -> None:
            async with self._sessions.begin() as session:
                session.add(AccountTokenRow(token_hash=token_hash, purpose=purpose, data=data, expires_ms=expires_ms))

        await self._storage.run("cannot keep the token", insert)

    async def take_token(self, token_hash: str, purpose: str, now_ms: int) -> dict[str, Any] | None:
        async def take() -> dict[str, Any] | None:
            async with self._sessions.begin() as session:
                row = await session.get(AccountTokenRow, token_hash)
                if row is None:
                    return None
                # the DELETE's row count decides who took it: of two calls at once, one deletes it
                gone = await session.execute(delete(AccountTokenRow).where(AccountTokenRow.token_hash == token_hash))
                # tokens past their time go too, whoever asks (they are never used again)
                await session.execute(delete(AccountTokenRow).where(AccountTokenRow.expires_ms < now_ms))
                taken: int = getattr(gone, "rowcount", 0)
                if taken != 1 or row.purpose != purpose or row.expires_ms < now_ms:
                    return None
                return dict(row.data)

        return await self._storage.run("cannot read the token", take)

    async def create_account(self, account: Account, passkey: Passkey) -> bool:
        async def insert() -> bool:
            try:
                async with self._sessions.begin() as session:
                    session.add(
                        AccountRow(
                            id=account.id, name=account.name, name_key=account.name_key, created_ms=account.created_ms
                        )
                    )
                    await session.flush()  # the account first: its name may be taken
                    session.add(self._passkey_row(passkey))
            except IntegrityError:
                return False
            return True

        return await self._storage.run("cannot create the account", insert)

    @staticmethod
    def _passkey_row(passkey: Passkey) -> PasskeyRow:
        return PasskeyRow(
            id=passkey.id,
            account_id=passkey.account,
            public_key=passkey.public_key,
            sign_count=passkey.sign_count,
            label=passkey.label,
            created_ms=passkey.created_ms,
            used_ms=passkey.used_ms,
        )

    async def account(self, account_id: str) -> Account | None:
        async def read() -> AccountRow | None:
            async with self._sessions() as session:
                return await session.get(AccountRow, account_id)

        row = await self._storage.run("cannot read the account", read)
        return None if row is None else _account(row)

    async def account_of_name(self, name_key: str) -> Account | None:
        async def read() -> AccountRow | None:
            async with self._sessions() as session:
                return await session.scalar(select(AccountRow).where(AccountRow.name_key == name_key))

        row = await self._storage.run("cannot read the account", read)
        return None if row is None else _account(row)

    async def add_passkey(self, passkey: Passkey) -> None:
        async def insert() -> None:
            async with self._sessions.begin() as session:
                session.add(self._passkey_row(passkey))

        await self._storage.run("cannot add the passkey", insert)

    async def passkey(self, credential_id: str) -> Passkey | None:
        async def read() -> PasskeyRow | None:
            async with self._sessions() as session:
                return await session.get(PasskeyRow, credential_id)

        row = await self._storage.run("cannot read the passkey", read)
        return None if row is None else _passkey(row)

    async def passkeys_of(self, account_id: str) -> list[Passkey]:
        query = select(PasskeyRow).where(PasskeyRow.account_id == account_id).order_by(PasskeyRow.created_ms)

        async def read() -> list[PasskeyRow]:
            async with self._sessions() as session:
                return list((await session.scalars(query)).all())

        return [_passkey(row) for row in await self._storage.run("cannot list the passkeys", read)]

    async def passkey_used(self, credential_id: str, sign_count: int, at_ms: int) -> None:
        statement = (
            update(PasskeyRow).where(PasskeyRow.id == credential_id).values(sign_count=sign_count, used_ms=at_ms)
        )

        async def write() -> None:
            async with self._sessions.begin() as session:
                await session.execute(statement)

        await self._storage.run("cannot update the passkey", write)

    async def revoke_passkey(self, account_id: str, credential_id: str) -> bool:
        async def revoke() -> bool:
            async with self._sessions.begin() as session:
                gone = await session.execute(
                    delete(PasskeyRow).where(PasskeyRow.id == credential_id, PasskeyRow.account_id == account_id)
                )
                if getattr(gone, "rowcount", 0) != 1:
                    return False
                await session.execute(delete(AccountSessionRow).where(AccountSessionRow.passkey == credential_id))
                return True

        return await self._storage.run("cannot revoke the passkey", revoke)

    async def link_player(self, account_id: str, player: str, at_ms: int) -> bool:
        async def link() -> bool:
            try:
                async with self._sessions.begin() as session:
                    session.add(AccountPlayerRow(player=player, account_id=account_id, linked_ms=at_ms))
            except IntegrityError:
                async with self._sessions() as session:
                    row = await session.get(AccountPlayerRow, player)
                return row is not None and row.account_id == account_id
            return True

        return await self._storage.run("cannot link the player key", link)

    async def players_of(self, account_id: str) -> list[str]:
        query = select(AccountPlayerRow.player).where(AccountPlayerRow.account_id == account_id)

        async def read() -> list[str]:
            async with self._sessions() as session:
                return list((await session.scalars(query)).all())

        return await self._storage.run("cannot list the account's player keys", read)

    async def account_of_player(self, player: str) -> str | None:
        async def read() -> AccountPlayerRow | None:
            async with self._sessions() as session:
                return await session.get(AccountPlayerRow, player)

        row = await self._storage.run("cannot read the player key's account", read)
        return None if row is None else row.account_id

    async def add_session(self, session_: Session) -> None:
        async def insert() -> None:
            async with self._sessions.begin() as session:
                # sessions past their time go as new ones come (nothing reads them again)
                expired = AccountSessionRow.expires_ms < session_.created_ms
                await session.execute(delete(AccountSessionRow).where(expired))
                session.add(
                    AccountSessionRow(
                        secret_hash=session_.secret_hash,
                        id=session_.id,
                        account_id=session_.account,
                        passkey=session_.passkey,
                        player=session_.player,
                        label=session_.label,
                        created_ms=session_.created_ms,
                        expires_ms=session_.expires_ms,
                    )
                )

        await self._storage.run("cannot start the session", insert)

    async def session(self, secret_hash: str, now_ms: int) -> Session | None:
        async def read() -> AccountSessionRow | None:
            async with self._sessions() as session:
                return await session.get(AccountSessionRow, secret_hash)

        row = await self._storage.run("cannot read the session", read)
        return None if row is None or row.expires_ms <= now_ms else _session(row)

    async def sessions_of(self, account_id: str, now_ms: int) -> list[Session]:
        query = (
            select(AccountSessionRow)
            .where(AccountSessionRow.account_id == account_id, AccountSessionRow.expires_ms > now_ms)
            .order_by(AccountSessionRow.created_ms)
        )

        async def read() -> list[AccountSessionRow]:
            async with self._sessions() as session:
                return list((await session.scalars(query)).all())

        return [_session(row) for row in await self._storage.run("cannot list the sessions", read)]

    async def end_session(self, account_id: str, session_id: str) -> bool:
        statement = delete(AccountSessionRow).where(
            AccountSessionRow.id == session_id, AccountSessionRow.account_id == account_id
        )

        async def end() -> bool:
            async with self._sessions.begin() as session:
                return bool(getattr(await session.execute(statement), "rowcount", 0) == 1)

        return await self._storage.run("cannot end the session", end)


class MemoryAccounts:
    """:class:`~halfmoon_server.ports.Accounts` in dictionaries: nothing kept past the process."""

    def __init__(self, *, players: dict[str, str] | None = None) -> None:
        self.tokens: dict[str, tuple[str, dict[str, Any], int]] = {}
        self.accounts: dict[str, Account] = {}
        self.passkeys: dict[str, Passkey] = {}
        # player key hash -> account id, in the order they were linked
        self.players: dict[str, str] = {} if players is None else players
        self.sessions: dict[str, Session] = {}  # by secret hash

    async def put_token(self, token_hash: str, purpose: str, data: dict[str, Any], expires_ms: int) -> None:
        self.tokens[token_hash] = (purpose, dict(data), expires_ms)

    async def take_token(self, token_hash: str, purpose: str, now_ms: int) -> dict[str, Any] | None:
        held = self.tokens.pop(token_hash, None)
        if held is None or held[0] != purpose or held[2] < now_ms:
            return None
        return held[1]

    async def create_account(self, account: Account, passkey: Passkey) -> bool:
        if any(a.name_key == account.name_key for a in self.accounts.values()) or account.id in self.accounts:
            return False
        self.accounts[account.id] = account
        self.passkeys[passkey.id] = passkey
        return True

    async def account(self, account_id: str) -> Account | None:
        return self.accounts.get(account_id)

    async def account_of_name(self, name_key: str) -> Account | None:
        return next((a for a in self.accounts.values() if a.name_key == name_key), None)

    async def add_passkey(self, passkey: Passkey) -> None:
        self.passkeys[passkey.id] = passkey

    async def passkey(self, credential_id: str) -> Passkey | None:
        return self.passkeys.get(credential_id)

    async def passkeys_of(self, account_id: str) -> list[Passkey]:
        return sorted((p for p in self.passkeys.values() if p.account == account_id), key=lambda p: p.created_ms)

    async def passkey_used(self, credential_id: str, sign_count: int, at_ms: int) -> None:
        held = self.passkeys.get(credential_id)
        if held is not None:
            self.passkeys[credential_id] = replace(held, sign_count=sign_count, used_ms=at_ms)

    async def revoke_passkey(self, account_id: str, credential_id: str) -> bool:
        held = self.passkeys.get(credential_id)
        if held is None or held.account != account_id:
            return False
        del self.passkeys[credential_id]
        for key, session in list(self.sessions.items()):
            if session.passkey == credential_id:
                del self.sessions[key]
        return True

    async def link_player(self, account_id: str, player: str, at_ms: int) -> bool:
        return self.players.setdefault(player, account_id) == account_id

    async def players_of(self, account_id: str) -> list[str]:
        return [player for player, account in self.players.items() if account == account_id]

    async def account_of_player(self, player: str) -> str | None:
        return self.players.get(player)

    async def add_session(self, session: Session) -> None:
        self.sessions[session.secret_hash] = session

    async def session(self, secret_hash: str, now_ms: int) -> Session | None:
        held = self.sessions.get(secret_hash)
        return None if held is None or held.expires_ms <= now_ms else held

    async def sessions_of(self, account_id: str, now_ms: int) -> list[Session]:
        mine = (s for s in self.sessions.values() if s.account == account_id and s.expires_ms > now_ms)
        return sorted(mine, key=lambda s: s.created_ms)

    async def end_session(self, account_id: str, session_id: str) -> bool:
        for key, session in list(self.sessions.items()):
            if session.id == session_id and session.account == account_id:
                del self.sessions[key]
                return True
        return False
