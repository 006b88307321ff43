# postgres:15-bookworm from Debian's postgresql-15 (see build.sh), with the official image's variables:
# POSTGRES_USER, POSTGRES_PASSWORD(_FILE), POSTGRES_DB, PGDATA.
FROM debian:bookworm-slim
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENTRYPOINT ["docker-entrypoint.sh"]
EXPOSE 5432
STOPSIGNAL SIGINT
CMD ["postgres"]
