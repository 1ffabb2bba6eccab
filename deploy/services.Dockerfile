# The cluster's other services for deploy/compose.yaml, from Debian's own packages on the same
# base as the server's image (deploy/Dockerfile): one target each.
#   docker build --network host -f deploy/services.Dockerfile --target postgres -t halfmoon-postgres .
# (compose builds them: no image needs Docker Hub once BASE is local, see .ci/base-image)
ARG BASE=debian:bookworm-slim

FROM ${BASE} AS postgres
# a fixed uid, so the password file on the host can be given to it (deploy/RUNBOOK.md: chown 10002)
RUN groupadd --system --gid 10002 postgres \
    && useradd --system --uid 10002 --gid postgres --home-dir /var/lib/postgresql --shell /bin/sh postgres \
    && apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/halfmoon-postgres && chown postgres:postgres /var/lib/halfmoon-postgres
COPY deploy/postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
USER postgres
ENV PGDATA=/var/lib/halfmoon-postgres/data
VOLUME ["/var/lib/halfmoon-postgres"]
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint"]

FROM ${BASE} AS redis
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data && chown redis:redis /data
# started as root only to read the password file (any owner, 0600), then redis-server as redis
COPY deploy/redis-entrypoint.sh /usr/local/bin/redis-entrypoint
VOLUME ["/data"]
ENTRYPOINT ["/usr/local/bin/redis-entrypoint"]

FROM ${BASE} AS nginx
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >/dev/null \
    && rm -rf /var/lib/apt/lists/*
# deploy/nginx.conf, mounted here by compose; its temporary files and pid are under /tmp
ENTRYPOINT ["nginx", "-g", "daemon off;", "-c", "/etc/halfmoon/nginx.conf"]
