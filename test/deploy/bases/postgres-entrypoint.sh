#!/bin/bash
# The official postgres image's contract, in short: as root, own the data directory and drop to postgres;
# on an empty data directory, initdb with POSTGRES_USER / POSTGRES_PASSWORD (or POSTGRES_PASSWORD_FILE)
# and create POSTGRES_DB; then run the command (arguments starting with - are postgres's).
set -euo pipefail
if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi
if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" && chown -R postgres:postgres "$PGDATA" && chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  user="${POSTGRES_USER:-postgres}"
  if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then POSTGRES_PASSWORD="$(cat "$POSTGRES_PASSWORD_FILE")"; fi
  pw="$(mktemp)"
  printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pw"
  auth=scram-sha-256
  [ -z "${POSTGRES_PASSWORD:-}" ] && auth=trust
  initdb --username="$user" --pwfile="$pw" --auth-local=trust --auth-host="$auth" >/dev/null
  rm -f "$pw"
  echo "host all all all $auth" >>"$PGDATA/pg_hba.conf"
  db="${POSTGRES_DB:-$user}"
  if [ "$db" != postgres ]; then
    postgres --single -j -D "$PGDATA" postgres >/dev/null <<<"CREATE DATABASE \"$db\" OWNER \"$user\";"
  fi
fi
exec "$@"
