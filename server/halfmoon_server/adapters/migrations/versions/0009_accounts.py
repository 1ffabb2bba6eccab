"""Optional accounts with passkeys (docs/security.md, "Accounts"): accounts (a name reserved by its
look-alike skeleton), their passkeys (WebAuthn credentials), the player keys linked to each, the
signed-in devices (sessions, by the hash of their secret) and one-time tokens (ceremony
challenges, device links, by the hash of their id). Nothing here changes the games table.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(40), nullable=False),
        sa.Column("name_key", sa.String(40), nullable=False, unique=True),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "passkeys",
        sa.Column("id", sa.String(1400), primary_key=True),
        sa.Column("account_id", sa.String(32), nullable=False, index=True),
        sa.Column("public_key", sa.LargeBinary, nullable=False),
        sa.Column("sign_count", sa.BigInteger, nullable=False),
        sa.Column("label", sa.String(64), nullable=False),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column("used_ms", sa.BigInteger, nullable=True),
    )
    op.create_table(
        "account_players",
        sa.Column("player", sa.String(64), primary_key=True),
        sa.Column("account_id", sa.String(32), nullable=False, index=True),
        sa.Column("linked_ms", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "account_sessions",
        sa.Column("secret_hash", sa.String(64), primary_key=True),
        sa.Column("id", sa.String(32), nullable=False, unique=True),
        sa.Column("account_id", sa.String(32), nullable=False, index=True),
        sa.Column("passkey", sa.String(1400), nullable=True, index=True),
        sa.Column("player", sa.String(64), nullable=True),
        sa.Column("label", sa.String(64), nullable=False),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column("expires_ms", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "account_tokens",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("purpose", sa.String(8), nullable=False),
        sa.Column("data", sa.JSON, nullable=False),
        sa.Column("expires_ms", sa.BigInteger, nullable=False, index=True),
    )


def downgrade() -> None:
    for table in ("account_tokens", "account_sessions", "account_players", "passkeys", "accounts"):
        op.drop_table(table)
