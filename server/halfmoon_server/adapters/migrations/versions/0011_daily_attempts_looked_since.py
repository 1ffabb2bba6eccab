"""Whether anybody may have seen the day's cards since a daily attempt was claimed: set on the
claims of the same day that share a name, an address or an account with any later claim. A claim
the database recorded but did not answer for is handed back, ranked as it was, only while it is
unset (:meth:`halfmoon_server.ports.Storage.claim_daily_attempt`, ``retrying``), so a look at the
cards under another name, from the same address or account, spends it — on whichever instance.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("daily_attempts") as batch:
        # the attempts already recorded count as looked at: none of them is handed back
        batch.add_column(sa.Column("looked_since", sa.Boolean(), nullable=False, server_default=sa.true()))


def downgrade() -> None:
    with op.batch_alter_table("daily_attempts") as batch:
        batch.drop_column("looked_since")
