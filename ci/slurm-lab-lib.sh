# shellcheck shell=bash
# ci/slurm-lab-lib.sh - what ci/slurm-up.sh and ci/slurm-down.sh share: the lab's paths and pid
# files, the log lines, the liveness check of a daemon's pid and the one way a daemon is stopped
# (by its pid, never by name). Sourced, not run: the two scripts source it from their own directory,
# so it travels with them. The sourcing script sets PROG (the log prefix) and T0 (its start,
# ${EPOCHREALTIME/./}) first.

# ---------------------------------------------------------------- constants
RUN=/run/slurm-lab
MARK=$RUN/started # "started by slurm-up" markers: $MARK/<daemon key> holds the pid
# shellcheck disable=SC2034 # used by the sourcing scripts
STATE=/var/lib/slurm-lab
declare -gA PIDFILE=(
	[munged]=/run/munge/munged.pid
	[mariadbd]=/run/mysqld/mysqld.pid
	[slurmdbd]=$RUN/slurmdbd.pid
	[slurmctld]=$RUN/slurmctld.pid
	[slurmd]=$RUN/slurmd.pid
)

need_root() { # why: exit 1 with "<prog>: must be run as root (<why>)" unless run as root
	if ((EUID != 0)); then
		echo "$PROG: must be run as root ($1)" >&2
		exit 1
	fi
}

# ---------------------------------------------------------------- time and log lines
ELAPSED=0
elapsed() { # sets ELAPSED to seconds since T0 (microsecond string)
	local d=$((${EPOCHREALTIME/./} - T0))
	printf -v ELAPSED '%d.%06d' $((d / 1000000)) $((d % 1000000))
}
log() {
	elapsed
	printf '[%s %7.2fs] %s\n' "$PROG" "$ELAPSED" "$*"
}
now_us() { NOW_US=${EPOCHREALTIME/./}; }
secs() { printf -v SECS '%d.%02d' $(($1 / 1000000)) $(($1 % 1000000 / 10000)); } # microseconds

# ---------------------------------------------------------------- daemons by pid
# A daemon key names its pid file, log and marker; its program (/proc/<pid>/comm) is the part
# before the first '-' (slurmd-<node> is slurmd).
pid_alive() { # pid program: /proc/<pid>/comm is program and the process is not a zombie
	local pid=$1 name=$2 comm="" stat=""
	[[ $pid =~ ^[1-9][0-9]*$ ]] || return 1
	read -r comm 2>/dev/null <"/proc/$pid/comm" || return 1
	[[ $comm == "$name" ]] || return 1
	read -r stat 2>/dev/null <"/proc/$pid/stat" || return 1
	stat=${stat##*) }
	[[ ${stat%% *} != Z ]]
}
RPID=""
# shellcheck disable=SC2034 # RPID is read by the sourcing scripts
running_pid() { # key: 0 and RPID=<pid> when the daemon of the pid file is alive
	local f=${PIDFILE[$1]:-$RUN/$1.pid} p=""
	RPID=""
	[[ -s $f ]] || return 1
	read -r p 2>/dev/null <"$f" || [[ -n $p ]] || return 1
	pid_alive "$p" "${1%%-*}" || return 1
	RPID=$p
}
drop_marker() { # key pid: remove the marker $MARK/<key> when it holds pid
	local m=""
	[[ -f $MARK/$1 ]] || return 0
	read -r m 2>/dev/null <"$MARK/$1" || true
	[[ $m != "$2" ]] || rm -f "$MARK/$1"
}

STOP_LEFT=()
stop_pids() { # [-v] key=pid...: SIGTERM every pid at once, poll every 0.2 s for up to 30 s,
	# SIGKILL the survivors ("<key> (pid <pid>) still running after 30s: SIGKILL"), poll up to 5 s
	# more. As each pid ends, its marker is dropped (drop_marker) and, with -v, the stop is logged:
	# "stopped <key> (pid <pid>) in <s>s", " (SIGKILL)" added after the SIGKILL. 0 when every pid
	# ended; 1 otherwise, with STOP_LEFT=(key=pid...) the ones that survived SIGKILL.
	local verbose=0 x i left start deadline how=""
	local -a keys=() pids=() gone=()
	if [[ ${1:-} == -v ]]; then
		verbose=1
		shift
	fi
	for x; do
		keys+=("${x%%=*}")
		pids+=("${x#*=}")
		gone+=(0)
	done
	STOP_LEFT=()
	((${#keys[@]})) || return 0
	now_us
	start=$NOW_US
	deadline=$((start + 30 * 1000000))
	for x in "${pids[@]}"; do kill -TERM "$x" 2>/dev/null || true; done
	while :; do
		left=0
		for i in "${!keys[@]}"; do
			((gone[i] == 0)) || continue
			if pid_alive "${pids[i]}" "${keys[i]%%-*}"; then
				left=1
				continue
			fi
			gone[i]=1
			drop_marker "${keys[i]}" "${pids[i]}"
			if ((verbose)); then
				now_us
				secs $((NOW_US - start))
				log "stopped ${keys[i]} (pid ${pids[i]}) in ${SECS}s$how"
			fi
		done
		((left)) || return 0
		now_us
		if ((NOW_US >= deadline)); then
			[[ -z $how ]] || break # SIGKILL sent 5 s ago
			for i in "${!keys[@]}"; do
				((gone[i] == 0)) || continue
				log "${keys[i]} (pid ${pids[i]}) still running after 30s: SIGKILL"
				kill -KILL "${pids[i]}" 2>/dev/null || true
			done
			how=" (SIGKILL)"
			deadline=$((NOW_US + 5 * 1000000))
			continue
		fi
		sleep 0.2
	done
	for i in "${!keys[@]}"; do
		((gone[i])) || STOP_LEFT+=("${keys[i]}=${pids[i]}")
	done
	return 1
}
