"""Ratings (docs/server.md, "Ratings"): a game keeps its race's seat count (``seats``: the
ratings job waits until every seat of a race is stored) and whether it waits for the job
(``rating_due``, through a partial index that holds only the waiting games); ``ratings`` holds
each identity's current rating, ``rating_history`` its rating before and after each rated race,
``rated_races`` the races rated, numbered in the order they were (a rebuild repeats it).

Games stored before this revision have no seat count: they are never rated.

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
        batch.add_column(sa.Column("seats", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("rating_due", sa.Boolean(), nullable=True))
    op.create_index(
        "ix_games_rating_due",
        "games",
        ["rating_due"],
        sqlite_where=sa.text("rating_due IS NOT NULL"),
        postgresql_where=sa.text("rating_due IS NOT NULL"),
    )
    op.create_table(
        "ratings",
        sa.Column("player", sa.String(64), primary_key=True),
        sa.Column("nickname", sa.String(40), nullable=False),
        sa.Column("mu", sa.Float(), nullable=False),
        sa.Column("sigma", sa.Float(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "rating_history",
        sa.Column("game_id", sa.String(16), primary_key=True),
        sa.Column("player", sa.String(64), nullable=False),
        sa.Column("race", sa.Integer(), nullable=False),
        sa.Column("place", sa.Integer(), nullable=False),
        sa.Column("mu_before", sa.Float(), nullable=False),
        sa.Column("sigma_before", sa.Float(), nullable=False),
        sa.Column("mu_after", sa.Float(), nullable=False),
        sa.Column("sigma_after", sa.Float(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("rated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_rating_history_player", "rating_history", ["player", "race"])
    op.create_table(
        "rated_races",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("room", sa.String(8), nullable=False),
        sa.Column("code", sa.String(40), nullable=False),
        sa.Column("players", sa.Integer(), nullable=False),
        sa.Column("rated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("room", "code", name="uq_rated_races_race"),
    )


def downgrade() -> None:
    op.drop_table("rated_races")
    op.drop_index("ix_rating_history_player", table_name="rating_history")
    op.drop_table("rating_history")
    op.drop_table("ratings")
    op.drop_index("ix_games_rating_due", table_name="games")
    with op.batch_alter_table("games") as batch:
        batch.drop_column("rating_due")
        batch.drop_column("seats")
