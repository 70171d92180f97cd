#!/usr/bin/env bash
# A throwaway PostgreSQL server on 127.0.0.1 for the test run.
#
#   eval "$(bash .ci/postgres.sh start)"   # prints: export NIA_TEST_POSTGRES_URL=... NIA_CI_POSTGRES_DIR=...
#   bash .ci/postgres.sh stop              # stops it and removes its files (reads NIA_CI_POSTGRES_DIR)
#
# `start` installs PostgreSQL with apt-get when no server binaries (initdb, pg_ctl) are found,
# initializes a cluster in a temp dir, starts it on a free port of 127.0.0.1 only, and creates
# the database nia_test. Only the export lines go to stdout; progress goes to stderr.
# As root the server runs as the `postgres` user (it refuses to run as root).
set -euo pipefail

STATE_FILE="${TMPDIR:-/tmp}/nia-ci-postgres.dir"

log() { echo "postgres.sh: $*" >&2; }

find_bin_dir() {
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then echo "$dir"; return 0; fi
    done
    if command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then
        dirname "$(command -v pg_ctl)"; return 0
    fi
    if command -v pg_config >/dev/null && [[ -x "$(pg_config --bindir)/initdb" ]]; then
        pg_config --bindir; return 0
    fi
    return 1
}

install_postgres() {
    command -v apt-get >/dev/null || { log "no PostgreSQL server binaries and no apt-get to install them"; exit 1; }
    local sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    log "installing PostgreSQL with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >&2
    $sudo apt-get install -y -qq --no-install-recommends postgresql >&2
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
    local bin_dir
    bin_dir=$(find_bin_dir) || { install_postgres; bin_dir=$(find_bin_dir) || { log "still no initdb/pg_ctl"; exit 1; }; }
    log "using $bin_dir"

    local parent="${TMPDIR:-/tmp}"
    [[ -d /dev/shm && -w /dev/shm ]] && parent=/dev/shm  # memory-backed: creating tables is much faster
    local dir
    dir=$(mktemp -d "$parent/nia-ci-pg.XXXXXX")
    local run=()
    if [[ $(id -u) -eq 0 ]]; then
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
        chown postgres "$dir"
        run=(runuser -u postgres --)
    fi

    "${run[@]}" "$bin_dir/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    local port
    port=$(free_port)
    "${run[@]}" "$bin_dir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o \
        "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='$dir' -c max_connections=300 -c fsync=off -c full_page_writes=off" \
        >&2 || { cat "$dir/server.log" >&2; exit 1; }
    "$bin_dir/createdb" -h 127.0.0.1 -p "$port" -U postgres nia_test >&2
    echo "$dir" >"$STATE_FILE"
    log "PostgreSQL $("$bin_dir/pg_ctl" --version | awk '{print $3}') on 127.0.0.1:$port (data in $dir)"
    echo "export NIA_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:$port/nia_test"
    echo "export NIA_CI_POSTGRES_DIR=$dir"
}

stop() {
    local dir="${NIA_CI_POSTGRES_DIR:-}"
    [[ -n "$dir" ]] || dir=$(cat "$STATE_FILE" 2>/dev/null || true)
    [[ -n "$dir" && -d "$dir/data" ]] || { log "no server to stop"; return 0; }
    local bin_dir run=()
    bin_dir=$(find_bin_dir)
    [[ $(id -u) -eq 0 ]] && run=(runuser -u postgres --)
    "${run[@]}" "$bin_dir/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    rm -rf "$dir"
    rm -f "$STATE_FILE"
    log "stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
