"""The daily challenge's ranked attempt per account (docs/security.md, "Accounts"): an attempt keeps
the account its player key (or signed-in device) belongs to and the room it is played in. One
attempt a day per account (a unique index on ``day`` and ``account``; attempts of keys linked to
no account leave it NULL, which the index does not count), so two devices of one account asking at
once get one ranked attempt between them; the room lets another signed-in device of the account
resume the attempt.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("daily_attempts") as batch:
        batch.add_column(sa.Column("account", sa.String(32), nullable=True))
        batch.add_column(sa.Column("room", sa.String(16), nullable=True))
    op.create_index("uq_daily_attempts_account", "daily_attempts", ["day", "account"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_daily_attempts_account", table_name="daily_attempts")
    with op.batch_alter_table("daily_attempts") as batch:
        batch.drop_column("room")
        batch.drop_column("account")
