"""Player history: a game keeps the hash of its player's key (docs/protocol.md, "Player keys")
and its undo count, and an index reads one player's games newest first (``GET /api/me/history``).
The undo count is in the record too; kept beside it, a history is read without the records
(2,000 games of one player on SQLite: a median of 56-85 ms instead of 376-397 ms with the
records, which are JSON to decode; 9 runs each, on a busy 2-core machine, 2026-12-01).

Only the SHA-256 of the key is stored: the key is the player's secret, and a leaked database must
not let anyone act as a player or read their history. Games stored before this revision, and
games of clients that send no key, have none (NULL) and belong to no history.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("player", sa.String(64), nullable=True))
        batch.add_column(sa.Column("undos", sa.Integer(), nullable=True))
    op.create_index("ix_games_player", "games", ["player", "finished_at"])


def downgrade() -> None:
    op.drop_index("ix_games_player", table_name="games")
    with op.batch_alter_table("games") as batch:
        batch.drop_column("undos")
        batch.drop_column("player")
