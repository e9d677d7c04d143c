#!/usr/bin/env bash
# ci/postgres-down.sh - stop the PostgreSQL server that ci/postgres-up.sh started, and with
# --purge remove its state directory. Only the postmaster whose pid postgres-up recorded
# (/run/dispatch-pg/started/postgres) is stopped, and only while that pid is still a postgres
# process and the cluster's own postmaster.pid names it; nothing is ever stopped by name.
set -Eeuo pipefail
export LC_ALL=C

PROG=postgres-down
T0=${EPOCHREALTIME/./}

usage() {
	cat <<'EOF'
Usage: ci/postgres-down.sh [--dir DIR] [--bindir DIR] [--purge]

Stop the server ci/postgres-up.sh started (marker /run/dispatch-pg/started/postgres holding the
postmaster's pid): pg_ctl stop -m fast (which signals the pid in the cluster's postmaster.pid),
waiting up to 30 s; if the postmaster is still alive then, SIGKILL to that pid only.
  - no marker: the server is left alone ("not started by postgres-up");
  - a marker whose pid is gone, is no postgres, or is not the cluster's postmaster: stale,
    removed, nothing signalled.
Must run as root.

Options (environment variable in brackets):
  --dir DIR      [DISPATCH_PG_DIR] the state directory (default /var/lib/dispatch-pg)
  --bindir DIR   [DISPATCH_PG_BINDIR] PostgreSQL's programs (default: the newest
                 /usr/lib/postgresql/*/bin with pg_ctl)
  --purge        then remove the state directory (the cluster, its log and the DSN file);
                 refused while a postgres still runs on it
  -h, --help     show this help and exit
Exit status: 0 done, 1 failure, 2 bad usage.
EOF
}

DIR=${DISPATCH_PG_DIR:-/var/lib/dispatch-pg}
BINDIR=${DISPATCH_PG_BINDIR:-}
PURGE=0
while (($#)); do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--purge) PURGE=1 ;;
	--dir | --bindir)
		if (($# < 2)); then
			printf '%s: option %s needs a value (see --help)\n' "$PROG" "$1" >&2
			exit 2
		fi
		case $1 in --dir) DIR=$2 ;; --bindir) BINDIR=$2 ;; esac
		shift
		;;
	--dir=*) DIR=${1#*=} ;;
	--bindir=*) BINDIR=${1#*=} ;;
	*)
		printf '%s: unknown argument: %s (see --help)\n' "$PROG" "$1" >&2
		exit 2
		;;
	esac
	shift
done
if [[ $DIR != /?* || $DIR == *[[:space:]]* || $DIR == */ || $DIR == / ]]; then
	printf '%s: bad --dir/DISPATCH_PG_DIR %s (see --help)\n' "$PROG" "$DIR" >&2
	exit 2
fi
if ((EUID != 0)); then
	echo "$PROG: must be run as root (it signals a server of user postgres)" >&2
	exit 1
fi

DATA=$DIR/data
MARKER=/run/dispatch-pg/started/postgres

log() {
	local d=$((${EPOCHREALTIME/./} - T0))
	printf '[%s %3d.%02ds] %s\n' "$PROG" $((d / 1000000)) $((d % 1000000 / 10000)) "$*"
}
pid_alive() { # pid: /proc/<pid>/comm is postgres and the process is not a zombie
	local pid=$1 comm="" stat=""
	[[ $pid =~ ^[1-9][0-9]*$ ]] || return 1
	read -r comm 2>/dev/null <"/proc/$pid/comm" || return 1
	[[ $comm == postgres ]] || return 1
	read -r stat 2>/dev/null <"/proc/$pid/stat" || return 1
	stat=${stat##*) }
	[[ ${stat%% *} != Z ]]
}
postmaster_pid() { # the pid the cluster's postmaster.pid names ("" when none)
	local p=""
	if [[ -s $DATA/postmaster.pid ]]; then read -r p 2>/dev/null <"$DATA/postmaster.pid" || true; fi
	printf '%s' "$p"
}
if [[ -z $BINDIR ]]; then
	for d in /usr/lib/postgresql/*/bin; do
		[[ -x $d/pg_ctl ]] || continue
		if [[ -z $BINDIR ]] || (($(basename "$(dirname "$d")") > $(basename "$(dirname "$BINDIR")"))); then
			BINDIR=$d
		fi
	done
fi

RC=0
pid=""
if [[ -f $MARKER ]]; then read -r pid 2>/dev/null <"$MARKER" || true; fi
if [[ ! -f $MARKER ]]; then
	p=$(postmaster_pid)
	if pid_alive "$p"; then
		log "postgres (pid $p): not started by postgres-up, left alone"
	else
		log "postgres: not started by postgres-up, left alone (not running)"
	fi
elif ! pid_alive "$pid" || [[ $(postmaster_pid) != "$pid" ]]; then
	rm -f "$MARKER"
	log "stale marker (pid ${pid:-none} is not the postmaster of $DATA): removed, nothing signalled"
else
	log "stopping postgres (pid $pid)"
	start=$SECONDS
	if [[ -x $BINDIR/pg_ctl ]]; then
		runuser -u postgres -- "$BINDIR/pg_ctl" -D "$DATA" -m fast -w -t 30 stop ||
			log "pg_ctl stop did not finish"
	else
		kill -TERM "$pid" 2>/dev/null || true
	fi
	deadline=$((SECONDS + 30))
	while pid_alive "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
	if pid_alive "$pid"; then
		log "postgres (pid $pid) still running after 30 s: SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
		deadline=$((SECONDS + 5))
		while pid_alive "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
	fi
	if pid_alive "$pid"; then
		log "ERROR: postgres (pid $pid) survived SIGKILL; marker kept" >&2
		RC=1
	else
		rm -f "$MARKER"
		log "stopped postgres (pid $pid) in $((SECONDS - start)) s"
	fi
fi

if ((PURGE)); then
	p=$(postmaster_pid)
	if pid_alive "$p"; then
		log "ERROR: postgres (pid $p) still runs on $DATA - $DIR not removed" >&2
		RC=1
	elif [[ -e $DIR ]]; then
		rm -rf -- "$DIR"
		log "removed $DIR"
	fi
fi
log "done"
exit "$RC"
