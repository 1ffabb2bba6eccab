"""Sealed races and ranked daily attempts per address: a game keeps its race's salt (so anyone can
check the deal against the commitment), a daily attempt the hashed address it came from.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("salt", sa.String(32), nullable=True))
    with op.batch_alter_table("daily_attempts") as batch:
        batch.add_column(sa.Column("address", sa.String(32), nullable=True))
        batch.add_column(sa.Column("ranked", sa.Boolean(), nullable=False, server_default=sa.true()))
    op.create_index("ix_daily_attempts_address", "daily_attempts", ["day", "address"])


def downgrade() -> None:
    op.drop_index("ix_daily_attempts_address", table_name="daily_attempts")
    with op.batch_alter_table("daily_attempts") as batch:
        batch.drop_column("ranked")
        batch.drop_column("address")
    with op.batch_alter_table("games") as batch:
        batch.drop_column("salt")
