"""Ranked and casual results (docs/security.md, "Ranked and casual results"): a game keeps why it
is not ranked — ``casual`` (its code was known before the start: an open race, a solo game),
``daily_retry``, ``bot`` or ``too_fast`` — beside ``ranked``.

Games stored before this revision were all stored ``ranked`` but the daily's retries; the open
races' and solo games' become casual here (their code was known in advance), and the daily's
retries get their reason. A sealed race's game (a salt, or since 0006 a seal) and a daily's first
attempt stay ranked: whether a bot played them, or too fast, was not known then.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("unranked_reason", sa.String(16), nullable=True))
    games = sa.table(
        "games",
        sa.column("mode", sa.String),
        sa.column("salt", sa.String),
        sa.column("seal", sa.JSON),
        sa.column("ranked", sa.Boolean),
        sa.column("unranked_reason", sa.String),
    )
    # a game with no seal, as 0006's storage wrote it, holds the JSON null (SQLAlchemy's JSON type
    # stores Python's None so), not SQL NULL: both mean "no seal"
    no_seal = games.c.seal.is_(None) | (sa.cast(games.c.seal, sa.Text) == "null")
    casual = (games.c.mode == "solo") | ((games.c.mode == "race") & games.c.salt.is_(None) & no_seal)
    op.execute(games.update().where(casual).values(ranked=False, unranked_reason="casual"))
    retry = (games.c.mode == "daily") & games.c.ranked.is_(False)
    op.execute(games.update().where(retry).values(unranked_reason="daily_retry"))


def downgrade() -> None:
    with op.batch_alter_table("games") as batch:
        batch.drop_column("unranked_reason")
