#!/usr/bin/env bash
# A throwaway PostgreSQL 15 server for perfgate's tests: no systemd, data in
# a temporary folder, a unix socket and 127.0.0.1, trust authentication (tests
# only). Used by ctest (a fixture around every test that needs it) and by
# anyone trying the shared store by hand.
#
#   scripts/services/postgres.sh start    # prints the connection URL on stdout
#   scripts/services/postgres.sh url      # the URL of the running server
#   scripts/services/postgres.sh stop     # stops it and removes the data
#
# Env: PERFGATE_PG_DIR (default ${TMPDIR:-/tmp}/perfgate-pg-$UID), PERFGATE_PG_PORT (54329).
# As root the server runs as the package's 'postgres' user (PostgreSQL
# refuses root).
set -euo pipefail
dir=${PERFGATE_PG_DIR:-${TMPDIR:-/tmp}/perfgate-pg-$(id -u)}
port=${PERFGATE_PG_PORT:-54329}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -x $bin/pg_ctl ]] || { echo "postgres.sh: PostgreSQL server binaries not found (install postgresql-15; scripts/setup.sh does)" >&2; exit 2; }

as_owner() {
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}
url() { echo "postgresql://postgres@/perfgate?host=$dir/sock&port=$port"; }

case ${1:-} in
  start)
    if [[ $(id -u) == 0 ]] && ! id -u postgres >/dev/null 2>&1; then
      useradd --system --no-create-home --shell /usr/sbin/nologin postgres
    fi
    mkdir -p "$dir"
    [[ $(id -u) == 0 ]] && chown postgres "$dir"
    if ! as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      if [[ ! -s $dir/data/PG_VERSION ]]; then
        as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log"
        # fsync off: a test server's data is thrown away, and commits are 10x faster.
        as_owner tee -a "$dir/data/postgresql.conf" >/dev/null <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/sock'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
        # One role that must give its password over TCP, for the tests of a
        # wrong password; everything else is trusted (a test server).
        as_owner sed -i '1i host all perfgate_pw 127.0.0.1/32 scram-sha-256' "$dir/data/pg_hba.conf"
      fi
      as_owner mkdir -p "$dir/sock"
      as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start >/dev/null
    fi
    as_owner "$bin/psql" -h "$dir/sock" -p "$port" -U postgres -d postgres -qAt \
      -c "SELECT 1 FROM pg_database WHERE datname = 'perfgate'" | grep -q 1 ||
      as_owner "$bin/createdb" -h "$dir/sock" -p "$port" -U postgres perfgate
    as_owner "$bin/psql" -h "$dir/sock" -p "$port" -U postgres -d postgres -qAt -c \
      "DO \$\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'perfgate_pw') THEN
         CREATE ROLE perfgate_pw LOGIN PASSWORD 'pw-for-tests-only'; END IF; END \$\$" >/dev/null
    url
    ;;
  url) url ;;
  stop)
    if [[ -d $dir/data ]]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start|url|stop" >&2; exit 2 ;;
esac
