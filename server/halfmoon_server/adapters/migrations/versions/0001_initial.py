"""The first schema: finished games, the daily challenges and the daily attempts.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "games",
        sa.Column("id", sa.String(16), primary_key=True),
        sa.Column("nickname", sa.String(40), nullable=False),
        sa.Column("name_key", sa.String(40), nullable=False),
        sa.Column("code", sa.String(16), nullable=False),
        sa.Column("mode", sa.String(8), nullable=False),
        sa.Column("room", sa.String(8), nullable=False),
        sa.Column("score", sa.Integer, nullable=False),
        sa.Column("moves", sa.Integer, nullable=False),
        sa.Column("time_ms", sa.BigInteger, nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("record", sa.JSON, nullable=False),
        sa.Column("ranked", sa.Boolean, nullable=False),
        sa.Column("daily_date", sa.Date, nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_games_code_rank", "games", ["code", "score", "time_ms"])
    op.create_index("ix_games_daily_rank", "games", ["daily_date", "ranked", "score", "time_ms"])
    op.create_table(
        "daily_challenges",
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("code", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "daily_attempts",
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("name_key", sa.String(40), primary_key=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("daily_attempts")
    op.drop_table("daily_challenges")
    op.drop_index("ix_games_daily_rank", table_name="games")
    op.drop_index("ix_games_code_rank", table_name="games")
    op.drop_table("games")
