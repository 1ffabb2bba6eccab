"""Leaderboards read in their own order: the daily and per-code leaderboards become index reads.

The leaderboards are ranked ``score DESC, time_ms ASC, finished_at ASC``. The indexes of 0001
kept ``score`` and ``time_ms`` both ascending and left ``finished_at`` out, so PostgreSQL could
only scan them backwards by score and then sort each score's games by time: at a million
results of one day the daily leaderboard spilled that sort to disk and took 130 ms
(docs/capacity.md). These indexes carry the ranking's exact order, so the query reads the first
rows of the index and stops at its ``LIMIT``; they replace the old ones (same leading columns:
``daily_players`` and the other prefix reads use them alike).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_games_daily_board", "games", ["daily_date", "ranked", sa.text("score DESC"), "time_ms", "finished_at"]
    )
    op.create_index("ix_games_code_board", "games", ["code", sa.text("score DESC"), "time_ms", "finished_at"])
    op.drop_index("ix_games_daily_rank", table_name="games")
    op.drop_index("ix_games_code_rank", table_name="games")


def downgrade() -> None:
    op.create_index("ix_games_code_rank", "games", ["code", "score", "time_ms"])
    op.create_index("ix_games_daily_rank", "games", ["daily_date", "ranked", "score", "time_ms"])
    op.drop_index("ix_games_code_board", table_name="games")
    op.drop_index("ix_games_daily_board", table_name="games")
