"""Ratings (docs/server.md, "Ratings"): a game keeps how many racers its race had, so a race is
rated once all its games are stored; each identity's rating (``ratings``) and its history, one
row per identity and race (``rating_changes``), kept race by race by the storage and rebuilt from
the games alone by ``halfmoon ratings rebuild``.

Games stored before this revision have no racer count (NULL): their races are not rated, by the
storage or by a rebuild alike, so the two agree. Ratings start with this release's races.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("racers", sa.Integer(), nullable=True))
    op.create_table(
        "ratings",
        sa.Column("player", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(40), nullable=False),
        sa.Column("mu", sa.Double(), nullable=False),
        sa.Column("sigma", sa.Double(), nullable=False),
        sa.Column("ordinal", sa.Double(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
    )
    op.create_index("ix_ratings_board", "ratings", [sa.text("ordinal DESC"), "player"])
    op.create_table(
        "rating_changes",
        sa.Column("race", sa.String(16), primary_key=True),
        sa.Column("player", sa.String(64), primary_key=True),
        sa.Column("ended_at", sa.BigInteger(), nullable=False),
        sa.Column("game", sa.String(16), nullable=False),
        sa.Column("name", sa.String(40), nullable=False),
        sa.Column("place", sa.Integer(), nullable=False),
        sa.Column("field", sa.Integer(), nullable=False),
        sa.Column("mu_before", sa.Double(), nullable=False),
        sa.Column("sigma_before", sa.Double(), nullable=False),
        sa.Column("games_before", sa.Integer(), nullable=False),
        sa.Column("mu_after", sa.Double(), nullable=False),
        sa.Column("sigma_after", sa.Double(), nullable=False),
        sa.Column("games_after", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(16), nullable=True),
    )
    op.create_index("ix_rating_changes_order", "rating_changes", ["ended_at", "race"])
    op.create_index("ix_rating_changes_player", "rating_changes", ["player", "ended_at"])


def downgrade() -> None:
    op.drop_index("ix_rating_changes_player", table_name="rating_changes")
    op.drop_index("ix_rating_changes_order", table_name="rating_changes")
    op.drop_table("rating_changes")
    op.drop_index("ix_ratings_board", table_name="ratings")
    op.drop_table("ratings")
    with op.batch_alter_table("games") as batch:
        batch.drop_column("racers")
