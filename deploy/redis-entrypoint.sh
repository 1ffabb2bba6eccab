#!/bin/sh
# Redis for deploy/compose.yaml, with a password: Redis on the host's network answers every local
# user and program on 127.0.0.1, and it holds the live rooms (a sealed race's seed and its racers'
# contributions, so its deal, before the start). The password is read here, as root, from
# REDIS_PASSWORD_FILE (a compose secret), handed to redis-server as a configuration line on its
# standard input — never on a command line (ps) or in its environment — and Redis runs as the
# redis user, with the arguments compose gives (--port ...).
set -eu
: "${REDIS_PASSWORD_FILE:?a file holding the password}"
password="$(cat "$REDIS_PASSWORD_FILE")"
case "$password" in
  "" | *[!A-Za-z0-9_-]*) echo "redis-entrypoint: $REDIS_PASSWORD_FILE must hold one line of letters, digits, - and _" >&2; exit 1 ;;
esac
exec setpriv --reuid=redis --regid=redis --init-groups redis-server - "$@" <<CONFIG
requirepass $password
CONFIG
