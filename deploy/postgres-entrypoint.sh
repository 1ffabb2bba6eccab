#!/bin/sh
# PostgreSQL for deploy/compose.yaml: on the first start, a cluster whose one role (halfmoon)
# has the password in POSTGRES_PASSWORD_FILE (a compose secret, never an environment value) and a
# database halfmoon; then the server, with the arguments compose gives (-p PORT ...).
set -eu
: "${PGDATA:?}" "${POSTGRES_PASSWORD_FILE:?a file holding the password}"
bin=/usr/lib/postgresql/15/bin
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  "$bin/initdb" --username=halfmoon --pwfile="$POSTGRES_PASSWORD_FILE" --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA" >/dev/null
  echo "CREATE DATABASE halfmoon OWNER halfmoon" | "$bin/postgres" --single -D "$PGDATA" postgres >/dev/null
  echo "postgres-entrypoint: created the cluster and the database halfmoon"
fi
exec "$bin/postgres" -D "$PGDATA" "$@"
