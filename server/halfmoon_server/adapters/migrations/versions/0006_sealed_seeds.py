"""Secret deals (docs/security.md, "Nobody picks the deal"): a sealed race's game keeps the seed
and the racers' contributions its deal was derived from, as JSON ``{"seed", "contributions"}``
(``halfmoon verify`` and ``GET /api/games/{id}`` reveal them once the race is over), and deal
codes take the long form of a secret deal (``HM1-S-ABCDEFG-HIJKLMN-OPQRSTU-VWXYZAB``, 37
characters; docs/deal-codes.md), so the code columns widen from 16 to 40 characters.

The ``salt`` column stays: a sealed race of the previous release is opened by its code and salt,
and a daily attempt's salt opens the day's commitment.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("seal", sa.JSON(), nullable=True))
        batch.alter_column("code", type_=sa.String(40), existing_type=sa.String(16), existing_nullable=False)
    with op.batch_alter_table("daily_challenges") as batch:
        batch.alter_column("code", type_=sa.String(40), existing_type=sa.String(16), existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("daily_challenges") as batch:
        batch.alter_column("code", type_=sa.String(16), existing_type=sa.String(40), existing_nullable=False)
    with op.batch_alter_table("games") as batch:
        batch.alter_column("code", type_=sa.String(16), existing_type=sa.String(40), existing_nullable=False)
        batch.drop_column("seal")
