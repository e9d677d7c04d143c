#!/usr/bin/env bash
# ci/slurm-down.sh - stop the one-host Slurm lab cluster started by ci/slurm-up.sh.
# Only daemons that slurm-up started (marker /run/slurm-lab/started/<name> holding a pid whose
# /proc/<pid>/comm still names the daemon) are signalled; nothing is ever stopped by name.
set -Eeuo pipefail
export LC_ALL=C

PROG=slurm-down
T0=${EPOCHREALTIME/./}
# shellcheck source-path=SCRIPTDIR/.. source=ci/slurm-lab-lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/slurm-lab-lib.sh"

usage() {
	cat <<'EOF'
Usage: ci/slurm-down.sh [--keep-db] [--wipe-state]

Stop, in this order, every slurmd (markers slurmd and slurmd-<node>, all signalled at once),
slurmctld, slurmdbd, mariadbd and munged - but only the daemons that ci/slurm-up.sh started: each
has a marker /run/slurm-lab/started/<name> holding its pid.
  - no marker: the daemon is left alone ("not started by slurm-up, left alone");
  - marker whose pid's /proc/<pid>/comm is not the daemon: stale, removed, nothing signalled;
  - otherwise: SIGTERM to that pid only, wait up to 30 s (polling every 0.2 s), then SIGKILL.
Never uses pkill/killall. Must run as root.

Options:
  --keep-db      stop only the slurmds, slurmctld and slurmdbd; leave mariadbd and munged running
  --wipe-state   afterwards empty /var/lib/slurm-lab/slurmctld (job table, job id counter) and
                 /var/lib/slurm-lab/slurmd, including the per-node spool dirs
                 /var/lib/slurm-lab/slurmd/<node> (kept, emptied); refused while slurmctld or any
                 slurmd still runs. Accounting data in MariaDB is kept.
  -h, --help     show this help and exit
Exit status: 0 done, 1 failure, 2 bad usage.
EOF
}

KEEP_DB=0
WIPE=0
while (($#)); do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--keep-db) KEEP_DB=1 ;;
	--wipe-state) WIPE=1 ;;
	*)
		printf '%s: unknown argument: %s (see --help)\n' "$PROG" "$1" >&2
		exit 2
		;;
	esac
	shift
done

need_root "it signals system daemons"

RC=0
stop_group() { # names: stop every marked, live one at once (stop_pids: SIGTERM, 30 s, SIGKILL)
	local name prog m pid x
	local -a args=()
	for name; do
		m=$MARK/$name prog=${name%%-*} pid=""
		if [[ ! -e $m ]]; then
			if running_pid "$name"; then
				log "$name (pid $RPID): not started by slurm-up, left alone"
			else
				log "$name: not started by slurm-up, left alone (not running)"
			fi
			continue
		fi
		read -r pid 2>/dev/null <"$m" || true
		if ! pid_alive "$pid" "$prog"; then
			rm -f "$m"
			log "$name: stale marker (pid ${pid:-none} is not $prog): removed, nothing signalled"
			continue
		fi
		log "stopping $name (pid $pid)"
		args+=("$name=$pid")
	done
	stop_pids -v "${args[@]}" && return 0
	for x in "${STOP_LEFT[@]}"; do
		log "ERROR: ${x%%=*} (pid ${x#*=}) survived SIGKILL; marker kept" >&2
	done
	RC=1
}
stop_one() { stop_group "$1"; } # name

SLURMD_NAMES=()
slurmd_names() { # slurmd, then every slurmd-<node> with a marker or a pid file (sorted, unique)
	local f n seen=" "
	SLURMD_NAMES=(slurmd)
	for f in "$MARK"/slurmd-* "$RUN"/slurmd-*.pid; do
		[[ -f $f ]] || continue
		n=${f##*/}
		n=${n%.pid}
		[[ $seen == *" $n "* ]] && continue
		seen+="$n "
		SLURMD_NAMES+=("$n")
	done
}

mkdir -p "$MARK" 2>/dev/null || true
slurmd_names
stop_group "${SLURMD_NAMES[@]}" # every slurmd first, all at once
for name in slurmctld slurmdbd; do
	stop_one "$name"
done
if ((KEEP_DB)); then
	log "mariadbd, munged: kept running (--keep-db)"
else
	stop_one mariadbd
	stop_one munged
fi

if ((WIPE)); then
	busy=""
	if running_pid slurmctld; then busy+=" slurmctld(pid $RPID)"; fi
	# every slurmd of any layout: pid files slurmd.pid, slurmd-*.pid and markers slurmd, slurmd-*
	seen=" "
	for f in "$RUN"/slurmd.pid "$RUN"/slurmd-*.pid "$MARK"/slurmd "$MARK"/slurmd-*; do
		[[ -f $f ]] || continue
		pid=""
		read -r pid 2>/dev/null <"$f" || true
		if pid_alive "$pid" slurmd && [[ $seen != *" $pid "* ]]; then
			seen+="$pid "
			name=${f##*/}
			busy+=" ${name%.pid}(pid $pid)"
		fi
	done
	if [[ -n $busy ]]; then
		log "ERROR: still running:$busy - state not wiped" >&2
		RC=1
	else
		if [[ -d $STATE/slurmctld ]]; then find "$STATE/slurmctld" -mindepth 1 -delete; fi
		if [[ -d $STATE/slurmd ]]; then
			# empty the per-node spool dirs <node>/ (kept), then drop everything else at the top
			find "$STATE/slurmd" -mindepth 2 -delete
			find "$STATE/slurmd" -mindepth 1 -maxdepth 1 ! -type d -delete
		fi
		log "wiped $STATE/slurmctld and $STATE/slurmd, per-node spool dirs included (accounting data in MariaDB kept)"
	fi
fi
log "done"
exit "$RC"
