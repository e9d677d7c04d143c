#!/usr/bin/env bash
# ci/postgres-up.sh - install (when missing) and start a PostgreSQL server of Debian's packages
# for the record store's tests: its own cluster in a state directory, started with pg_ctl (no
# systemd, no pg_ctlcluster), listening on 127.0.0.1 only, with a role and a database
# "dispatch" (password auth over TCP). Must run as root. Idempotent. Prints the DSN on stdout
# (the only thing it prints there; its log goes to stderr). Stop with ci/postgres-down.sh.
set -Eeuo pipefail
export LC_ALL=C
umask 022

PROG=postgres-up
T0=${EPOCHREALTIME/./}

usage() {
	cat <<'EOF'
Usage: ci/postgres-up.sh [options]

Install Debian's postgresql (apt-get, non-interactive, nothing auto-started) when no server is
installed, create a cluster in the state directory (initdb, owned by the postgres user) when it
has none, start it with pg_ctl on 127.0.0.1:PORT when it is not running (a changed port
restarts it), create the login role and database "dispatch" when missing (the password is set
again on every run), wait until the role can log in over TCP with its password, and print the
DSN:

    postgresql://dispatch:PASSWORD@127.0.0.1:PORT/dispatch

Options (environment variable in brackets):
  --port N        [DISPATCH_PG_PORT] TCP port on 127.0.0.1 (default 55432)
  --dir DIR       [DISPATCH_PG_DIR] state directory (default /var/lib/dispatch-pg): data/ (the
                  cluster), run/ (its Unix socket), postgres.log, dsn (the DSN, mode 0600)
  --bindir DIR    [DISPATCH_PG_BINDIR] PostgreSQL's programs (default: the newest
                  /usr/lib/postgresql/*/bin with pg_ctl; never a pg_ctl found on PATH)
  --no-install    [DISPATCH_PG_INSTALL=0] never run apt-get; fail if no server is installed
  -h, --help      show this help and exit

Environment only:
  DISPATCH_PG_PASSWORD  the role's password (default dispatch-ci-pw: a throwaway server for tests);
                        letters, digits and . _ ~ - only, so the DSN needs no escaping

The postmaster's pid is recorded in /run/dispatch-pg/started/postgres ("started by postgres-up"),
which ci/postgres-down.sh uses; a server it did not start is never touched.
Exit status: 0 server up (DSN printed), 1 failure (the server's log is printed), 2 bad usage.
EOF
}

die_usage() {
	printf '%s: %s (see --help)\n' "$PROG" "$*" >&2
	exit 2
}

PORT=${DISPATCH_PG_PORT:-55432}
DIR=${DISPATCH_PG_DIR:-/var/lib/dispatch-pg}
BINDIR=${DISPATCH_PG_BINDIR:-}
INSTALL=${DISPATCH_PG_INSTALL:-1}
PASSWORD=${DISPATCH_PG_PASSWORD:-dispatch-ci-pw}

while (($#)); do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--no-install) INSTALL=0 ;;
	--port | --dir | --bindir)
		(($# >= 2)) || die_usage "option $1 needs a value"
		case $1 in --port) PORT=$2 ;; --dir) DIR=$2 ;; --bindir) BINDIR=$2 ;; esac
		shift
		;;
	--port=*) PORT=${1#*=} ;;
	--dir=*) DIR=${1#*=} ;;
	--bindir=*) BINDIR=${1#*=} ;;
	*) die_usage "unknown argument: $1" ;;
	esac
	shift
done

if [[ ! $PORT =~ ^[1-9][0-9]{0,4}$ ]] || ((PORT < 1024 || PORT > 65535)); then
	die_usage "bad --port/DISPATCH_PG_PORT '$PORT' (want 1024..65535)"
fi
[[ $DIR == /?* && $DIR != *[[:space:]]* && $DIR != */ ]] ||
	die_usage "bad --dir/DISPATCH_PG_DIR '$DIR' (want an absolute path without spaces or trailing /)"
[[ $INSTALL == [01] ]] || die_usage "bad DISPATCH_PG_INSTALL '$INSTALL' (want 0 or 1)"
[[ $PASSWORD =~ ^[A-Za-z0-9._~-]{1,64}$ ]] ||
	die_usage "bad DISPATCH_PG_PASSWORD (want 1..64 letters, digits, '.', '_', '~' or '-'; value not shown)"

if ((EUID != 0)); then
	echo "$PROG: must be run as root (it installs packages and starts a server as user postgres)" >&2
	exit 1
fi
# the server must not inherit a caller's descriptors (a held flock, the pipe of a $(...))
for fd_path in /proc/"$$"/fd/*; do
	fd=${fd_path##*/}
	if ((fd > 2 && fd != 255)); then eval "exec $fd>&-"; fi
done

DATA=$DIR/data
SOCK=$DIR/run
LOGFILE=$DIR/postgres.log
MARK=/run/dispatch-pg/started
HEADER='# written by postgres-up.sh'

log() {
	local d=$((${EPOCHREALTIME/./} - T0))
	printf '[%s %3d.%02ds] %s\n' "$PROG" $((d / 1000000)) $((d % 1000000 / 10000)) "$*" >&2
}
show_log() {
	if [[ -s $LOGFILE ]]; then
		printf -- '----- last 30 lines of %s -----\n' "$LOGFILE" >&2
		tail -n 30 "$LOGFILE" >&2 || true
	fi
}
fail() {
	log "ERROR: $*"
	show_log
	exit 1
}
as_pg() { runuser -u postgres -- "$@"; }
pid_alive() { # pid: /proc/<pid>/comm is postgres and the process is not a zombie
	local pid=$1 comm="" stat=""
	[[ $pid =~ ^[1-9][0-9]*$ ]] || return 1
	read -r comm 2>/dev/null <"/proc/$pid/comm" || return 1
	[[ $comm == postgres ]] || return 1
	read -r stat 2>/dev/null <"/proc/$pid/stat" || return 1
	stat=${stat##*) }
	[[ ${stat%% *} != Z ]]
}
RPID=""
running() { # 0 and RPID=<postmaster pid> when the cluster's postmaster.pid names a live postgres
	local p=""
	RPID=""
	[[ -s $DATA/postmaster.pid ]] || return 1
	read -r p 2>/dev/null <"$DATA/postmaster.pid" || true
	pid_alive "$p" || return 1
	RPID=$p
}
find_bindir() {
	local d best=""
	for d in /usr/lib/postgresql/*/bin; do
		[[ -x $d/pg_ctl && -x $d/initdb && -x $d/postgres ]] || continue
		if [[ -z $best ]] || (($(basename "$(dirname "$d")") > $(basename "$(dirname "$best")"))); then
			best=$d
		fi
	done
	BINDIR=$best
}

POLICY_CREATED=0
on_exit() {
	local rc=$?
	if ((POLICY_CREATED)); then rm -f /usr/sbin/policy-rc.d; fi
	return "$rc"
}
trap on_exit EXIT

# ---------------------------------------------------------------- 1. the server's programs
if [[ -z $BINDIR ]]; then find_bindir; fi
if [[ -z $BINDIR ]]; then
	((INSTALL)) || fail "no PostgreSQL server in /usr/lib/postgresql/*/bin (--no-install: not installing)"
	log "installing Debian's postgresql"
	export DEBIAN_FRONTEND=noninteractive
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then # nothing auto-starts (Debian's main cluster)
		POLICY_CREATED=1
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 0755 /usr/sbin/policy-rc.d
	fi
	APT_OPTS=(-y -q --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
	if ! apt-cache policy postgresql 2>/dev/null | grep -E '^[[:space:]]*Candidate: [^(]' >/dev/null; then
		log "apt lists lack postgresql: apt-get update"
		apt-get update -q >&2 || log "apt-get update failed (continuing)"
	fi
	if ! apt-get install "${APT_OPTS[@]}" postgresql >&2; then
		log "apt-get install failed: apt-get update, then one retry"
		apt-get update -q >&2 || log "apt-get update failed (continuing)"
		apt-get install "${APT_OPTS[@]}" postgresql >&2 || fail "apt-get install postgresql failed twice"
	fi
	find_bindir
	[[ -n $BINDIR ]] || fail "postgresql installed, but no /usr/lib/postgresql/*/bin/pg_ctl"
fi
[[ -x $BINDIR/pg_ctl && -x $BINDIR/initdb ]] || fail "no pg_ctl and initdb in $BINDIR"
id postgres >/dev/null 2>&1 || fail "no user postgres (Debian's postgresql-common creates it)"
VERSION=$("$BINDIR/postgres" --version) || fail "$BINDIR/postgres --version failed"
log "${VERSION#postgres (PostgreSQL) } from $BINDIR"

# ---------------------------------------------------------------- 2. the cluster
install -d -m 0755 /run/dispatch-pg "$MARK"
install -d -m 0700 -o postgres -g postgres "$DIR" "$SOCK"
if [[ ! -s $DATA/PG_VERSION ]]; then
	log "initdb $DATA"
	if [[ -e $DATA && -n $(ls -A "$DATA" 2>/dev/null) ]]; then
		fail "$DATA has files but no PG_VERSION: not a cluster; remove it or use another --dir"
	fi
	# the superuser postgres logs in only over the socket (peer); TCP needs a password
	if ! as_pg "$BINDIR/initdb" -D "$DATA" -U postgres -E UTF8 --locale=C \
		--auth-local=peer --auth-host=scram-sha-256 >"$DIR/initdb.log" 2>&1; then
		cat "$DIR/initdb.log" >&2
		fail "initdb failed"
	fi
	printf "\n%s\ninclude_if_exists = 'dispatch.conf'\n" "$HEADER" >>"$DATA/postgresql.conf"
fi
CONF=$(printf '%s\n' "$HEADER" \
	"listen_addresses = '127.0.0.1'" \
	"port = $PORT" \
	"unix_socket_directories = '$SOCK'" \
	"max_connections = 200")
RESTART=0
if [[ ! -f $DATA/dispatch.conf || $(<"$DATA/dispatch.conf") != "$CONF" ]]; then
	printf '%s\n' "$CONF" >"$DATA/dispatch.conf"
	chown postgres:postgres "$DATA/dispatch.conf"
	RESTART=1
fi

# ---------------------------------------------------------------- 3. the server
if running; then
	if ((RESTART)); then
		log "config changed: restarting postgres (pid $RPID)"
		as_pg "$BINDIR/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >&2 || fail "pg_ctl stop failed"
	else
		log "postgres already running (pid $RPID)"
	fi
fi
if ! running; then
	log "pg_ctl start on 127.0.0.1:$PORT"
	as_pg "$BINDIR/pg_ctl" -D "$DATA" -l "$LOGFILE" -w -t 60 start >&2 || fail "pg_ctl start failed"
	running || fail "pg_ctl start returned, but no live postmaster in $DATA/postmaster.pid"
	printf '%s\n' "$RPID" >"$MARK/postgres"
	log "started postgres (pid $RPID)"
fi

# ---------------------------------------------------------------- 4. role and database
psql_su() { as_pg "$BINDIR/psql" -h "$SOCK" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt "$@"; }
deadline=$((SECONDS + 60))
until as_pg "$BINDIR/pg_isready" -q -h "$SOCK" -p "$PORT"; do
	((SECONDS < deadline)) || fail "the server does not accept connections after 60 s"
	sleep 0.2
done
# the password goes through psql's variable (standard input), never a command line
psql_su -v pw="$PASSWORD" >/dev/null <<'SQL'
SELECT format('CREATE ROLE dispatch LOGIN PASSWORD %L', :'pw')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dispatch') \gexec
SELECT format('ALTER ROLE dispatch LOGIN PASSWORD %L', :'pw') \gexec
SELECT 'CREATE DATABASE dispatch OWNER dispatch'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'dispatch') \gexec
SQL
DSN="postgresql://dispatch:$PASSWORD@127.0.0.1:$PORT/dispatch"
deadline=$((SECONDS + 60))
until PGPASSWORD=$PASSWORD PGCONNECT_TIMEOUT=5 "$BINDIR/psql" -qAt -w \
	"host=127.0.0.1 port=$PORT user=dispatch dbname=dispatch" -c 'SELECT 1' >/dev/null 2>&1; do
	((SECONDS < deadline)) || fail "user dispatch cannot log in over TCP after 60 s"
	sleep 0.2
done
(
	umask 077
	printf '%s\n' "$DSN" >"$DIR/dsn"
)
log "up: user dispatch logs in at 127.0.0.1:$PORT, database dispatch (DSN also in $DIR/dsn)"
printf '%s\n' "$DSN"
