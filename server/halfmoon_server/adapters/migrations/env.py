"""Alembic environment: runs on the connection the server hands over (``config.attributes``)."""

from __future__ import annotations

from alembic import context

from halfmoon_server.adapters.models import Base

config = context.config
connection = config.attributes.get("connection")
if connection is None:  # pragma: no cover - the server always passes its connection
    raise RuntimeError("halfmoon_server migrations run through halfmoon_server.adapters.storage.migrate()")
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
