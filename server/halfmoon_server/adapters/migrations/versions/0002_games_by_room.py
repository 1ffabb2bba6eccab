"""Index the games by room, so a finished race's results can be rebuilt after its room is gone.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_games_room", "games", ["room"])


def downgrade() -> None:
    op.drop_index("ix_games_room", table_name="games")
