#!/usr/bin/env bash
# ci/slurm-up.sh - install and start a real one-host Slurm 22.05 cluster (Debian 12 packages:
# slurmctld + one slurmd per compute node (--nodes, default 2) + slurmdbd, MariaDB accounting, munge
# auth) as plain daemons: no systemd, no cgroups, no Docker. Must run as root. Idempotent: a rerun
# does only what is missing.
#
# Reference: docs of the Slurm lab (slurm-lab.md sections 1.3, 2, 3 and 4). Stop with ci/slurm-down.sh.
set -Eeuo pipefail
export LC_ALL=C
umask 022

PROG=slurm-up
T0=${EPOCHREALTIME/./}
# shellcheck source-path=SCRIPTDIR/.. source=ci/slurm-lab-lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/slurm-lab-lib.sh"

usage() {
	cat <<'EOF'
Usage: ci/slurm-up.sh [options]

Install (when missing) and start a Slurm 22.05 cluster on this one Debian 12 machine: munged,
mariadbd, slurmdbd, slurmctld and one slurmd per compute node, as plain daemons (no systemd, no
cgroups). Must run as root. Idempotent: with everything up, a rerun only looks things up. A changed
slurm.conf restarts every slurmd + slurmctld; a changed slurmdbd.conf restarts slurmdbd.
Flags override the environment.

Options (environment variable in brackets):
  --nodes N              [SLURM_LAB_NODES] number of compute nodes, 1..8 (default 2), each served by
                         its own slurmd on this host. N=1: one node named $(hostname -s) (SlurmdPort
                         6818, /run/slurm-lab/slurmd.pid, /var/log/slurm-lab/slurmd.log, spool
                         /var/lib/slurm-lab/slurmd). N>=2: nodes <host>1..<host>N (NodeHostname=<host>,
                         ports 6821.., started as slurmd -N <node>; pid file slurmd-<node>.pid, log
                         slurmd-<node>.log, spool /var/lib/slurm-lab/slurmd/<node>), each with the
                         CPUs of this host and 1/N of the RealMemory. Changing N rewrites
                         slurm.conf, so every slurmd (old layout and new) and slurmctld restart
  --job-comment          [SLURM_LAB_JOB_COMMENT=1] write AccountingStoreFlags=job_comment, so job
                         comments reach sacct (default)
  --no-job-comment       [SLURM_LAB_JOB_COMMENT=0] leave that line out (sacct Comment stays empty;
                         scontrol show config prints AccountingStoreFlags = (null))
  --first-job-id N       [SLURM_LAB_FIRST_JOB_ID] FirstJobId (default 1, N >= 1)
  --max-job-id N         [SLURM_LAB_MAX_JOB_ID] MaxJobId (default 20); usable ids are
                         FirstJobId .. MaxJobId-1, so it must be >= FirstJobId (FirstJobId+1 is the
                         smallest that accepts jobs) and <= 67043328
  --min-job-age N        [SLURM_LAB_MIN_JOB_AGE] MinJobAge in seconds (default 2; Slurm forces >= 2)
  --cred-expire N        [SLURM_LAB_CRED_EXPIRE] add AuthInfo=cred_expire=N (N >= 5); also sets the
                         requeue delay. Default: unset, i.e. Slurm's 120 s
  --cpus N               [SLURM_LAB_CPUS] CPUs (cores) each node declares, 1..64 (default: this
                         host's, from slurmd -C). More than the host has is allowed
                         (SlurmdParameters=config_overrides): jobs that mostly wait can then run
                         side by side, as the conformance suites' jobs do
  --sched-interval N     [SLURM_LAB_SCHED_INTERVAL] SchedulerParameters=sched_interval=N: seconds
                         between the main scheduler's periodic passes, which start a job whose
                         begin time has passed (a requeued one). Default: unset, i.e. Slurm's 60
  --role ROLE            [SLURM_LAB_ROLE] what this host runs: all (default: every daemon, the
                         nodes on this host), head (munged, mariadbd, slurmdbd, slurmctld; the nodes
                         are other hosts, --node-addrs) or node (munged and the one slurmd of the
                         node named $(hostname -s), one of --node-addrs; no wait for the controller)
  --controller NAME=ADDR [SLURM_LAB_CONTROLLER] the controller's host name and address
                         (SlurmctldHost=NAME(ADDR), AccountingStorageHost=NAME); needed with --role
                         head (NAME is then this host's name) or node. Default: this host, 127.0.0.1
  --node-addrs N=A[,N=A..] [SLURM_LAB_NODE_ADDRS] with --role head or node: the compute nodes, each
                         on its own host at address A (NodeAddr=A, SlurmdPort 6818); replaces
                         --nodes. Every host of the cluster must be given the same list and knobs,
                         so that each writes the same slurm.conf
  --slurmd-timeout N     [SLURM_LAB_SLURMD_TIMEOUT] SlurmdTimeout in seconds (default: Slurm's 300)
  --message-timeout N    [SLURM_LAB_MESSAGE_TIMEOUT] MessageTimeout (default: Slurm's 10)
  --tcp-timeout N        [SLURM_LAB_TCP_TIMEOUT] TCPTimeout (default: Slurm's 2). With a lost node's
                         address gone, slurmctld tries each connection 6 times TCPTimeout s, so
                         this bounds how soon a lost node goes DOWN (1/1/1: about 6 s)
  --no-install           [SLURM_LAB_INSTALL=0] never run apt-get; fail if a package is missing
  --empty                [SLURM_LAB_EMPTY=1] once the nodes are up, cancel every job slurmctld holds
                         (anyone's: use it only on a cluster of your own, as CI's is) and wait until
                         squeue -t all lists none, so what runs next starts from no leftover jobs
                         (bounded by MinJobAge + 3 purge passes; exit 1 if one stays)
  -h, --help             show this help and exit

Environment only:
  SLURM_LAB_CLUSTER         ClusterName and the sacctmgr cluster (default lab)
  SLURM_LAB_USERS           users added to account "lab", comma or space separated (default root)
  SLURM_LAB_DB_PASS         MariaDB password of user slurm, written to slurmdbd.conf (0600);
                            default slurmlab. No spaces, quotes, backslash or '#'. Never printed.
  SLURM_LAB_APT_RECOMMENDS  1 = install with recommends (~90 packages instead of 33); default 0

Packages: slurm-wlm slurmdbd slurm-client munge mariadb-server (--no-install-recommends), installed
only when missing, with a temporary /usr/sbin/policy-rc.d (exit 101) so nothing auto-starts.
Files: /etc/slurm/{slurm.conf,slurmdbd.conf,cgroup.conf}; state /var/lib/slurm-lab; logs
/var/log/slurm-lab; pid files /run/slurm-lab/*.pid; "started by slurm-up" markers
/run/slurm-lab/started/<daemon> (holding the pid; slurmd-<node> with N>=2), which
ci/slurm-down.sh uses.
Exit status: 0 cluster up (every node idle/mixed/allocated), 1 failure (the relevant logs are
printed), 2 bad usage.
EOF
}

die_usage() {
	printf '%s: %s (see --help)\n' "$PROG" "$*" >&2
	exit 2
}

# ---------------------------------------------------------------- knobs: environment, then flags
NODES=${SLURM_LAB_NODES:-2}
JOB_COMMENT=${SLURM_LAB_JOB_COMMENT:-1}
FIRST_JOB_ID=${SLURM_LAB_FIRST_JOB_ID:-1}
MAX_JOB_ID=${SLURM_LAB_MAX_JOB_ID:-20}
MIN_JOB_AGE=${SLURM_LAB_MIN_JOB_AGE:-2}
CRED_EXPIRE=${SLURM_LAB_CRED_EXPIRE:-}
CPUS=${SLURM_LAB_CPUS:-}
SCHED_INTERVAL=${SLURM_LAB_SCHED_INTERVAL:-}
CLUSTER=${SLURM_LAB_CLUSTER:-lab}
USERS_RAW=${SLURM_LAB_USERS:-root}
DB_PASS=${SLURM_LAB_DB_PASS:-slurmlab}
INSTALL=${SLURM_LAB_INSTALL:-1}
EMPTY=${SLURM_LAB_EMPTY:-0}
APT_RECOMMENDS=${SLURM_LAB_APT_RECOMMENDS:-0}
ROLE=${SLURM_LAB_ROLE:-all}
CONTROLLER=${SLURM_LAB_CONTROLLER:-}
NODE_ADDRS=${SLURM_LAB_NODE_ADDRS:-}
SLURMD_TIMEOUT=${SLURM_LAB_SLURMD_TIMEOUT:-}
MESSAGE_TIMEOUT=${SLURM_LAB_MESSAGE_TIMEOUT:-}
TCP_TIMEOUT=${SLURM_LAB_TCP_TIMEOUT:-}

set_num_opt() { # option value
	case $1 in
	--nodes) NODES=$2 ;;
	--first-job-id) FIRST_JOB_ID=$2 ;;
	--max-job-id) MAX_JOB_ID=$2 ;;
	--min-job-age) MIN_JOB_AGE=$2 ;;
	--cred-expire) CRED_EXPIRE=$2 ;;
	--cpus) CPUS=$2 ;;
	--sched-interval) SCHED_INTERVAL=$2 ;;
	--slurmd-timeout) SLURMD_TIMEOUT=$2 ;;
	--message-timeout) MESSAGE_TIMEOUT=$2 ;;
	--tcp-timeout) TCP_TIMEOUT=$2 ;;
	--role) ROLE=$2 ;;
	--controller) CONTROLLER=$2 ;;
	--node-addrs) NODE_ADDRS=$2 ;;
	esac
}

while (($#)); do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--job-comment) JOB_COMMENT=1 ;;
	--no-job-comment) JOB_COMMENT=0 ;;
	--no-install) INSTALL=0 ;;
	--empty) EMPTY=1 ;;
	--nodes | --first-job-id | --max-job-id | --min-job-age | --cred-expire | --cpus | --sched-interval | \
		--slurmd-timeout | --message-timeout | --tcp-timeout | --role | --controller | --node-addrs)
		(($# >= 2)) || die_usage "option $1 needs a value"
		set_num_opt "$1" "$2"
		shift
		;;
	--nodes=* | --first-job-id=* | --max-job-id=* | --min-job-age=* | --cred-expire=* | --cpus=* | --sched-interval=* | \
		--slurmd-timeout=* | --message-timeout=* | --tcp-timeout=* | --role=* | --controller=* | --node-addrs=*)
		set_num_opt "${1%%=*}" "${1#*=}"
		;;
	*) die_usage "unknown argument: $1" ;;
	esac
	shift
done

is_uint() { [[ $1 =~ ^(0|[1-9][0-9]{0,8})$ ]]; }

if ! is_uint "$NODES" || ((NODES < 1 || NODES > 8)); then
	die_usage "bad --nodes/SLURM_LAB_NODES '$NODES' (want an integer 1..8)"
fi
[[ $JOB_COMMENT == [01] ]] || die_usage "bad SLURM_LAB_JOB_COMMENT '$JOB_COMMENT' (want 0 or 1)"
[[ $INSTALL == [01] ]] || die_usage "bad SLURM_LAB_INSTALL '$INSTALL' (want 0 or 1)"
[[ $EMPTY == [01] ]] || die_usage "bad SLURM_LAB_EMPTY '$EMPTY' (want 0 or 1)"
[[ $APT_RECOMMENDS == [01] ]] || die_usage "bad SLURM_LAB_APT_RECOMMENDS '$APT_RECOMMENDS' (want 0 or 1)"
if ! is_uint "$FIRST_JOB_ID" || ((FIRST_JOB_ID < 1 || FIRST_JOB_ID > 67043328)); then
	die_usage "bad --first-job-id/SLURM_LAB_FIRST_JOB_ID '$FIRST_JOB_ID' (want an integer 1..67043328)"
fi
if ! is_uint "$MAX_JOB_ID" || ((MAX_JOB_ID < FIRST_JOB_ID || MAX_JOB_ID > 67043328)); then
	die_usage "bad --max-job-id/SLURM_LAB_MAX_JOB_ID '$MAX_JOB_ID' (want an integer $FIRST_JOB_ID..67043328, i.e. >= FirstJobId)"
fi
is_uint "$MIN_JOB_AGE" || die_usage "bad --min-job-age/SLURM_LAB_MIN_JOB_AGE '$MIN_JOB_AGE' (want an integer >= 0)"
if [[ -n $CRED_EXPIRE ]] && { ! is_uint "$CRED_EXPIRE" || ((CRED_EXPIRE < 5)); }; then
	die_usage "bad --cred-expire/SLURM_LAB_CRED_EXPIRE '$CRED_EXPIRE' (want an integer >= 5)"
fi
if [[ -n $CPUS ]] && { ! is_uint "$CPUS" || ((CPUS < 1 || CPUS > 64)); }; then
	die_usage "bad --cpus/SLURM_LAB_CPUS '$CPUS' (want an integer 1..64)"
fi
if [[ -n $SCHED_INTERVAL ]] && { ! is_uint "$SCHED_INTERVAL" || ((SCHED_INTERVAL < 1)); }; then
	die_usage "bad --sched-interval/SLURM_LAB_SCHED_INTERVAL '$SCHED_INTERVAL' (want an integer >= 1)"
fi
for t in "SLURMD_TIMEOUT:$SLURMD_TIMEOUT:--slurmd-timeout" "MESSAGE_TIMEOUT:$MESSAGE_TIMEOUT:--message-timeout" \
	"TCP_TIMEOUT:$TCP_TIMEOUT:--tcp-timeout"; do
	IFS=: read -r t_name t_val t_flag <<<"$t"
	if [[ -n $t_val ]] && { ! is_uint "$t_val" || ((t_val < 1 || t_val > 3600)); }; then
		die_usage "bad $t_flag/SLURM_LAB_$t_name '$t_val' (want an integer 1..3600)"
	fi
done
[[ $ROLE =~ ^(all|head|node)$ ]] || die_usage "bad --role/SLURM_LAB_ROLE '$ROLE' (want all, head or node)"
HOST_RE='[a-z][a-z0-9-]{0,39}'
ADDR_RE='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}'
CTLD_NAME="" CTLD_ADDR=127.0.0.1
if [[ -n $CONTROLLER ]]; then
	[[ $CONTROLLER =~ ^($HOST_RE)=($ADDR_RE)$ ]] ||
		die_usage "bad --controller/SLURM_LAB_CONTROLLER '$CONTROLLER' (want NAME=IPv4, NAME lowercase)"
	CTLD_NAME=${CONTROLLER%%=*} CTLD_ADDR=${CONTROLLER#*=}
fi
REMOTE_NAMES=() REMOTE_ADDRS=()
if [[ -n $NODE_ADDRS ]]; then
	IFS=, read -r -a pairs <<<"$NODE_ADDRS"
	for pair in "${pairs[@]}"; do
		[[ $pair =~ ^($HOST_RE)=($ADDR_RE)$ ]] ||
			die_usage "bad --node-addrs/SLURM_LAB_NODE_ADDRS entry '$pair' (want NAME=IPv4, NAME lowercase)"
		[[ " ${REMOTE_NAMES[*]} " != *" ${pair%%=*} "* ]] || die_usage "node '${pair%%=*}' is named twice in --node-addrs"
		REMOTE_NAMES+=("${pair%%=*}") REMOTE_ADDRS+=("${pair#*=}")
	done
	((${#REMOTE_NAMES[@]} >= 1 && ${#REMOTE_NAMES[@]} <= 8)) || die_usage "--node-addrs names 1..8 nodes"
fi
if [[ $ROLE == all ]]; then
	[[ -z $NODE_ADDRS ]] || die_usage "--node-addrs needs --role head or node (with --role all the nodes are on this host)"
else
	[[ -n $NODE_ADDRS && -n $CONTROLLER ]] || die_usage "--role $ROLE needs --controller and --node-addrs"
	NODES=${#REMOTE_NAMES[@]}
fi
[[ $CLUSTER =~ ^[a-z0-9][a-z0-9_-]{0,39}$ ]] ||
	die_usage "bad SLURM_LAB_CLUSTER '$CLUSTER' (want lowercase letters, digits, '_' or '-', at most 40)"
read -r -a USERS <<<"${USERS_RAW//,/ }"
((${#USERS[@]})) || die_usage "SLURM_LAB_USERS is empty"
for u in "${USERS[@]}"; do
	[[ $u =~ ^[a-z_][a-z0-9_.-]{0,31}$ ]] || die_usage "bad user '$u' in SLURM_LAB_USERS"
done
if [[ -z $DB_PASS || ! $DB_PASS =~ ^[[:graph:]]+$ || $DB_PASS == *[\'\"\\#]* ]]; then
	die_usage "bad SLURM_LAB_DB_PASS (want printable ASCII without spaces, quotes, backslash or '#'; value not shown)"
fi

need_root "it installs packages and starts system daemons"
# The daemons must not inherit a caller's descriptors (a flock held by whoever ran this would
# stay held by munged, mariadbd and slurmdbd for as long as they run). 255 is bash's own.
for fd_path in /proc/"$$"/fd/*; do
	fd=${fd_path##*/}
	if ((fd > 2 && fd != 255)); then eval "exec $fd>&-"; fi
done

# ---------------------------------------------------------------- constants
# RUN, MARK, STATE and PIDFILE come from slurm-lab-lib.sh
LOGD=/var/log/slurm-lab
ETC=/etc/slurm
SOCK=/run/mysqld/mysqld.sock
ACCOUNT=lab
PKGS=(slurm-wlm slurmdbd slurm-client munge mariadb-server)
HEADER='# written by slurm-up.sh'
declare -A LOGFILE=(
	[munged]=/var/log/munge/munged.log
	[mariadbd]=$LOGD/mariadb.err
	[slurmdbd]=$LOGD/slurmdbd.log
	[slurmctld]=$LOGD/slurmctld.log
	[slurmd]=$LOGD/slurmd.log
)
# Compute nodes and the slurmd serving each. The daemon key names the pid file, log and marker:
# N=1: node $(hostname -s), key slurmd; N>=2: nodes <host>1..<host>N, keys slurmd-<node>
# (run as slurmd -N <node>). A key's program (/proc/<pid>/comm) is the part before the first '-'.
HOST=$(hostname -s)
NODE_NAMES=()
SLURMD_KEYS=()
REMOTE=0 # 1: the nodes are other hosts (--role head or node), each with its own slurmd
if [[ $ROLE != all ]]; then
	REMOTE=1
	NODE_NAMES=("${REMOTE_NAMES[@]}")
	if [[ $ROLE == head && $HOST != "$CTLD_NAME" ]]; then
		die_usage "--role head runs slurmctld, so this host ($HOST) must be the --controller ($CTLD_NAME)"
	fi
	if [[ $ROLE == node ]]; then
		[[ " ${NODE_NAMES[*]} " == *" $HOST "* ]] ||
			die_usage "--role node: this host ($HOST) is not one of the --node-addrs (${NODE_NAMES[*]})"
		SLURMD_KEYS=(slurmd)
	fi
elif ((NODES == 1)); then
	NODE_NAMES=("$HOST")
	SLURMD_KEYS=(slurmd)
else
	for ((i = 1; i <= NODES; i++)); do
		NODE_NAMES+=("$HOST$i")
		SLURMD_KEYS+=("slurmd-$HOST$i")
		PIDFILE[slurmd-$HOST$i]=$RUN/slurmd-$HOST$i.pid
		LOGFILE[slurmd-$HOST$i]=$LOGD/slurmd-$HOST$i.log
	done
fi
NODE_CSV=$(
	IFS=,
	echo "${NODE_NAMES[*]}"
)

# ---------------------------------------------------------------- helpers
# log, now_us, pid_alive, running_pid (RPID) and stop_pids come from slurm-lab-lib.sh
FAILED=0
show_logs() { # daemon keys; always adds slurmctld, and every node's slurmd when none is named
	local n f seen=" " extra=("${SLURMD_KEYS[@]}")
	for n in "$@"; do
		if [[ $n == slurmd || $n == slurmd-* ]]; then extra=(); fi
	done
	for n in "$@" slurmctld "${extra[@]}"; do
		[[ $seen == *" $n "* ]] && continue
		seen+="$n "
		f=${LOGFILE[$n]:-$LOGD/$n.log}
		if [[ -s $f ]]; then
			printf -- '----- last 30 lines of %s -----\n' "$f" >&2
			tail -n 30 "$f" >&2 || true
		fi
	done
}
fail() { # message, then the daemons whose logs matter
	local msg=$1
	shift
	elapsed
	printf '[%s %7.2fs] ERROR: %s\n' "$PROG" "$ELAPSED" "$msg" >&2
	show_logs "$@"
	FAILED=1
	exit 1
}

WAIT_FAIL_EXTRA=""
WAIT_FAIL_LOGS=""
wait_until() { # cap_seconds "what" "daemon keys" command...: poll every 0.2 s; fail when one of
	# the daemons (space separated) has a pid file but died, or at the cap (logs: WAIT_FAIL_LOGS or
	# the daemons)
	local cap=$1 what=$2 daemons=$3 deadline d
	shift 3
	now_us
	deadline=$((NOW_US + cap * 1000000))
	while :; do
		"$@" && return 0
		for d in $daemons; do
			if [[ -s ${PIDFILE[$d]:-$RUN/$d.pid} ]] && ! running_pid "$d"; then
				fail "$d died while waiting for $what$WAIT_FAIL_EXTRA" "$d"
			fi
		done
		now_us
		# shellcheck disable=SC2086 # word splitting of the daemon lists is intended
		((NOW_US < deadline)) || fail "timed out after ${cap}s waiting for $what$WAIT_FAIL_EXTRA" ${WAIT_FAIL_LOGS:-$daemons}
		sleep 0.2
	done
}

mark_started() { # name pid
	printf '%s\n' "$2" >"$MARK/$1"
	log "started $1 (pid $2)"
}
start_daemon() { # key restart [other daemons whose logs matter]: with restart=1 stop the running
	# daemon first ("config changed"); then, unless it runs, start /usr/sbin/<key>, wait for its pid
	# file and mark it started
	local key=$1 restart=$2
	shift 2
	if ((restart)) && running_pid "$key"; then
		log "config changed: stopping $key (pid $RPID) for restart"
		stop_or_fail "$key=$RPID"
	fi
	running_pid "$key" && return 0
	rm -f "${PIDFILE[$key]}"
	"/usr/sbin/$key" || fail "$key failed to start" "$key" "$@"
	wait_until 30 "$key pid file" "$key" running_pid "$key"
	mark_started "$key" "$RPID"
}

stop_or_fail() { # key=pid...: stop_pids (TERM, 30 s, KILL; markers dropped); fail when one survives
	stop_pids "$@" || fail "${*%%=*} (pids ${*#*=}) survived SIGKILL" "${@%%=*}"
}
stop_all_slurmd() { # every running slurmd of any layout (pid files slurmd.pid, slurmd-*.pid and
	# markers slurmd, slurmd-*), all at once; stale slurmd markers are removed
	local f key p seen=" " args=()
	for f in "$RUN"/slurmd.pid "$RUN"/slurmd-*.pid "$MARK"/slurmd "$MARK"/slurmd-*; do
		[[ -f $f ]] || continue
		key=${f##*/}
		key=${key%.pid}
		p=""
		read -r p 2>/dev/null <"$f" || true
		if pid_alive "$p" slurmd; then
			[[ $seen == *" $p "* ]] && continue
			seen+="$p "
			log "config changed: stopping $key (pid $p) for restart"
			args+=("$key=$p")
		elif [[ $f == "$MARK"/* ]]; then
			rm -f "$f"
			log "removed stale marker $f (pid ${p:-none} is not slurmd)"
		fi
	done
	((${#args[@]} == 0)) || stop_or_fail "${args[@]}"
}

# ---------------------------------------------------------------- phases and cleanup
PHASES=(packages munge mariadb "config files" slurmdbd "sacctmgr registration" slurmctld "slurmd + node idle")
if ((EMPTY)); then PHASES+=("empty the queue"); fi
declare -A PHASE_US=()
CUR_PHASE=packages
CUR_LOGS=""
PHASE_START=$T0
phase() { # name [daemons whose logs matter]
	now_us
	PHASE_US[$CUR_PHASE]=$((NOW_US - PHASE_START))
	CUR_PHASE=$1
	CUR_LOGS=${2:-}
	PHASE_START=$NOW_US
}

POLICY_CREATED=0
TMPFILES=()
ERR_LINE="?"
ERR_CMD="?"
on_exit() {
	local rc=$?
	((${#TMPFILES[@]})) && rm -f "${TMPFILES[@]}"
	if ((POLICY_CREATED)); then rm -f /usr/sbin/policy-rc.d; fi
	if ((rc != 0 && FAILED == 0)); then
		ERR_CMD=${ERR_CMD//"$DB_PASS"/***}
		elapsed
		printf '[%s %7.2fs] ERROR: phase "%s" failed (exit %d) at line %s: %s\n' \
			"$PROG" "$ELAPSED" "$CUR_PHASE" "$rc" "$ERR_LINE" "$ERR_CMD" >&2
		# shellcheck disable=SC2086 # word splitting of the daemon list is intended
		show_logs $CUR_LOGS
		exit 1 # unexpected failures exit 1 too (2 is reserved for bad usage)
	fi
	return "$rc"
}
trap on_exit EXIT
trap 'ERR_LINE=$LINENO ERR_CMD=$BASH_COMMAND' ERR

# ---------------------------------------------------------------- 1. packages
pkg_installed() { [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true) == "install ok installed" ]]; }
missing_pkgs() {
	MISSING=()
	local p
	for p in "${PKGS[@]}"; do pkg_installed "$p" || MISSING+=("$p"); done
}
missing_pkgs
if ((${#MISSING[@]})); then
	((INSTALL)) || fail "missing packages: ${MISSING[*]} (--no-install / SLURM_LAB_INSTALL=0: not installing)"
	log "installing: ${MISSING[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		POLICY_CREATED=1
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 0755 /usr/sbin/policy-rc.d
	fi
	# not `grep -q`: under pipefail an early-exiting grep can make the pipeline read as false
	if ! apt-cache policy slurmdbd 2>/dev/null | grep -E '^[[:space:]]*Candidate: [^(]' >/dev/null; then
		log "apt lists lack slurmdbd: apt-get update"
		apt-get update -q || log "apt-get update failed (continuing)"
	fi
	APT_OPTS=(-y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
	if ((APT_RECOMMENDS)); then APT_OPTS+=(--install-recommends); else APT_OPTS+=(--no-install-recommends); fi
	if ! apt-get install "${APT_OPTS[@]}" "${MISSING[@]}"; then
		log "apt-get install failed: apt-get update, then one retry"
		apt-get update -q || log "apt-get update failed (continuing)"
		apt-get install "${APT_OPTS[@]}" "${MISSING[@]}" || fail "apt-get install failed twice"
	fi
	if ((POLICY_CREATED)); then
		rm -f /usr/sbin/policy-rc.d
		POLICY_CREATED=0
	fi
	missing_pkgs
	((${#MISSING[@]} == 0)) || fail "still not installed after apt-get: ${MISSING[*]}"
fi
log "slurm $(dpkg-query -W -f='${Version}' slurm-wlm), munge $(dpkg-query -W -f='${Version}' munge)," \
	"mariadb $(dpkg-query -W -f='${Version}' mariadb-server)"

# ---------------------------------------------------------------- 2. directories, 3. munge
phase munge munged
install -d -m 0755 "$RUN" "$MARK" "$STATE"
install -d -m 0755 -o slurm -g slurm "$LOGD" "$STATE/slurmctld"
install -d -m 0755 "$STATE/slurmd" "$ETC"
if ((NODES > 1 && !REMOTE)); then
	for n in "${NODE_NAMES[@]}"; do install -d -m 0755 "$STATE/slurmd/$n"; done
fi

install -d -m 0700 -o munge -g munge /etc/munge /var/log/munge
install -d -m 0711 -o munge -g munge /var/lib/munge
install -d -m 0755 -o munge -g munge /run/munge
if [[ ! -e /etc/munge/munge.key ]]; then
	mungekey --create --keyfile=/etc/munge/munge.key
	log "created /etc/munge/munge.key"
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key
if ! running_pid munged; then
	rm -f "${PIDFILE[munged]}"
	runuser -u munge -- /usr/sbin/munged || fail "munged failed to start" munged
	wait_until 20 "munged pid file" munged running_pid munged
	mark_started munged "$RPID"
fi
if ! MUNGE_OUT=$(munge -n 2>&1 | unmunge 2>&1); then
	fail "munge round trip (munge -n | unmunge) failed: ${MUNGE_OUT##*$'\n'}" munged
fi

# ---------------------------------------------------------------- 4. MariaDB
if [[ $ROLE != node ]]; then # the nodes of a multi-host cluster keep no accounting
	phase mariadb mariadbd
	mariadb_ping() { mariadb-admin --socket="$SOCK" ping >/dev/null 2>&1; }
	if ! mariadb_ping; then
		if running_pid mariadbd; then
			log "mariadbd (pid $RPID) runs but does not answer yet: waiting"
			STARTED_DB=0
		else
			install -d -m 0755 -o mysql -g mysql /run/mysqld
			if [[ ! -d /var/lib/mysql/mysql ]]; then
				log "initialising /var/lib/mysql (mariadb-install-db)"
				mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null ||
					fail "mariadb-install-db failed" mariadbd
			fi
			[[ -e $LOGD/mariadb.err ]] || : >"$LOGD/mariadb.err"
			chown mysql:mysql "$LOGD/mariadb.err"
			rm -f "${PIDFILE[mariadbd]}"
			setsid /usr/sbin/mariadbd --user=mysql --datadir=/var/lib/mysql --socket="$SOCK" \
				--pid-file="${PIDFILE[mariadbd]}" --bind-address=127.0.0.1 \
				--innodb-buffer-pool-size=1G --innodb-lock-wait-timeout=900 \
				--log-error="$LOGD/mariadb.err" </dev/null >/dev/null 2>&1 &
			STARTED_DB=1
		fi
		wait_until 60 "mariadbd to answer ping" mariadbd mariadb_ping
		wait_until 10 "mariadbd pid file" mariadbd running_pid mariadbd
		if ((STARTED_DB)); then mark_started mariadbd "$RPID"; fi
	fi
	# Database and grants, every time (idempotent). SQL goes through stdin: the password never
	# appears on a command line or in this script's output.
	if ! SQL_OUT=$(
		mariadb --socket="$SOCK" -uroot 2>&1 <<-SQL
	CREATE DATABASE IF NOT EXISTS slurm_acct_db;
	CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
	ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
	GRANT ALL PRIVILEGES ON slurm_acct_db.* TO 'slurm'@'localhost';
	FLUSH PRIVILEGES;
	SQL
	); then
		fail "creating slurm_acct_db / user slurm / grants failed: ${SQL_OUT//"$DB_PASS"/***}" mariadbd
	fi

fi

# ---------------------------------------------------------------- 5. configuration files
phase "config files"
TOPO=""
if SLURMD_C=$(slurmd -C 2>/dev/null); then
	line=${SLURMD_C%%$'\n'*}
	if [[ $line == "NodeName=$HOST "*" RealMemory="* ]]; then
		TOPO=${line#"NodeName=$HOST "}
		TOPO=${TOPO%% RealMemory=*}
	fi
fi
[[ $TOPO == *CPUs=* ]] || TOPO="CPUs=$(nproc)"
if [[ -n $CPUS ]]; then
	TOPO="CPUs=$CPUS Boards=1 SocketsPerBoard=1 CoresPerSocket=$CPUS ThreadsPerCore=1"
fi
MEM_KB=0
while read -r key val _; do
	if [[ $key == MemTotal: ]]; then
		MEM_KB=$val
		break
	fi
done </proc/meminfo
# shellcheck disable=SC2017 # MiB first, then 90 % (the arithmetic of the reference)
REAL_MEM=$((MEM_KB / 1024 * 9 / 10 / NODES))

gen_slurm_conf() {
	local i
	if ((REMOTE)); then
		echo "$HEADER - $NODES-node cluster, one host per node, no systemd, no cgroups"
	elif ((NODES == 1)); then
		echo "$HEADER - single-node lab cluster, no systemd, no cgroups"
	else
		echo "$HEADER - $NODES-node lab cluster on one host (one slurmd per node), no systemd, no cgroups"
	fi
	cat <<EOF
ClusterName=$CLUSTER
SlurmctldHost=${CTLD_NAME:-$HOST}($CTLD_ADDR)
SlurmUser=slurm
AuthType=auth/munge
CryptoType=crypto/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/slurmd${SPOOL_SUFFIX}
SlurmctldPidFile=${PIDFILE[slurmctld]}
SlurmdPidFile=${SLURMD_PIDFILE}
SlurmctldLogFile=${LOGFILE[slurmctld]}
SlurmdLogFile=${SLURMD_LOGFILE}
SlurmctldDebug=info
SlurmdDebug=info
# no cgroups / systemd in this container
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/backfill
${SCHED_INTERVAL:+SchedulerParameters=sched_interval=$SCHED_INTERVAL
}${CPUS:+SlurmdParameters=config_overrides
}SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# accounting through slurmdbd
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=${CTLD_NAME:-localhost}
AccountingStoragePort=6819
JobCompType=jobcomp/none
EOF
	if [[ -n $SLURMD_TIMEOUT ]]; then echo "SlurmdTimeout=$SLURMD_TIMEOUT"; fi
	if [[ -n $MESSAGE_TIMEOUT ]]; then echo "MessageTimeout=$MESSAGE_TIMEOUT"; fi
	if [[ -n $TCP_TIMEOUT ]]; then echo "TCPTimeout=$TCP_TIMEOUT"; fi
	if ((JOB_COMMENT)); then echo "AccountingStoreFlags=job_comment"; fi
	if [[ -n $CRED_EXPIRE ]]; then echo "AuthInfo=cred_expire=$CRED_EXPIRE"; fi
	cat <<EOF
JobRequeue=1
FirstJobId=$FIRST_JOB_ID
MaxJobId=$MAX_JOB_ID
MinJobAge=$MIN_JOB_AGE
EOF
	if ((REMOTE)); then
		for i in "${!NODE_NAMES[@]}"; do
			echo "NodeName=${NODE_NAMES[i]} NodeAddr=${REMOTE_ADDRS[i]} $TOPO RealMemory=$REAL_MEM State=UNKNOWN"
		done
	elif ((NODES == 1)); then
		echo "NodeName=$HOST NodeAddr=127.0.0.1 $TOPO RealMemory=$REAL_MEM State=UNKNOWN"
	else
		for i in "${!NODE_NAMES[@]}"; do
			echo "NodeName=${NODE_NAMES[i]} NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((6821 + i))" \
				"$TOPO RealMemory=$REAL_MEM State=UNKNOWN"
		done
	fi
	echo "PartitionName=debug Nodes=$NODE_CSV Default=YES MaxTime=INFINITE State=UP"
}
gen_slurmdbd_conf() {
	cat <<EOF
$HEADER
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=slurm
DebugLevel=info
LogFile=${LOGFILE[slurmdbd]}
PidFile=${PIDFILE[slurmdbd]}
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageLoc=slurm_acct_db
StorageUser=slurm
StoragePass=$DB_PASS
EOF
}
gen_cgroup_conf() {
	cat <<EOF
$HEADER
# Not used by proctrack/linuxproc + task/none; present so nothing probes for it.
CgroupPlugin=autodetect
EOF
}

if ((NODES == 1 || REMOTE)); then
	SPOOL_SUFFIX="" SLURMD_PIDFILE=${PIDFILE[slurmd]} SLURMD_LOGFILE=${LOGFILE[slurmd]}
else
	SPOOL_SUFFIX=/%n SLURMD_PIDFILE=$RUN/slurmd-%n.pid SLURMD_LOGFILE=$LOGD/slurmd-%n.log
fi

CHANGED=0
install_conf() { # dest owner:group mode generator -> CHANGED=1 when (re)written
	local dest=$1 owner=$2 mode=$3 gen=$4 tmp first=""
	tmp=$(mktemp "$ETC/.${dest##*/}.XXXXXX") # 0600 from the start (slurmdbd.conf holds a password)
	TMPFILES+=("$tmp")
	"$gen" >"$tmp"
	if [[ -f $dest ]] && cmp -s "$tmp" "$dest"; then
		rm -f "$tmp"
		chown "$owner" "$dest"
		chmod "$mode" "$dest"
		CHANGED=0
		return 0
	fi
	if [[ -e $dest ]]; then
		read -r first 2>/dev/null <"$dest" || true
		if [[ $first != "$HEADER"* && ! -e $dest.pre-slurm-lab ]]; then
			cp -p "$dest" "$dest.pre-slurm-lab"
			log "kept the pre-existing $dest as $dest.pre-slurm-lab"
		fi
	fi
	chown "$owner" "$tmp"
	chmod "$mode" "$tmp"
	mv -f "$tmp" "$dest"
	CHANGED=1
}
install_conf "$ETC/slurm.conf" root:root 0644 gen_slurm_conf
CONF_CHANGED=$CHANGED
DBD_CHANGED=0
if [[ $ROLE != node ]]; then # the database password stays on the head
	install_conf "$ETC/slurmdbd.conf" slurm:slurm 0600 gen_slurmdbd_conf
	DBD_CHANGED=$CHANGED
fi
install_conf "$ETC/cgroup.conf" root:root 0644 gen_cgroup_conf
log "config: Role=$ROLE Nodes=$NODES JobComment=$JOB_COMMENT FirstJobId=$FIRST_JOB_ID MaxJobId=$MAX_JOB_ID MinJobAge=$MIN_JOB_AGE" \
	"cred_expire=${CRED_EXPIRE:-default} cpus=${CPUS:-host} sched_interval=${SCHED_INTERVAL:-default} (slurm.conf changed=$CONF_CHANGED, slurmdbd.conf changed=$DBD_CHANGED)"

# ---------------------------------------------------------------- 6. slurmdbd
if [[ $ROLE != node ]]; then # slurmdbd and slurmctld run on the head alone
	phase slurmdbd "slurmdbd mariadbd"
	start_daemon slurmdbd "$DBD_CHANGED" mariadbd
	CLUSTERS=""
	dbd_answers() { CLUSTERS=$(sacctmgr -n -P list cluster format=cluster 2>/dev/null); }
	wait_until 90 "slurmdbd to answer sacctmgr" slurmdbd dbd_answers

	# ---------------------------------------------------------------- 7. accounting registration (before slurmctld)
	phase "sacctmgr registration" slurmdbd
	sacctmgr_add() { # description, then the sacctmgr arguments
		local what=$1 out
		shift
		out=$(sacctmgr -i "$@" 2>&1) || fail "sacctmgr $* failed: $out" slurmdbd
		log "registered $what"
	}
	if ! grep -Fx -- "$CLUSTER" >/dev/null <<<"$CLUSTERS"; then
		sacctmgr_add "cluster $CLUSTER" add cluster "$CLUSTER"
	fi
	ASSOC_OUT=$(sacctmgr -n -P list assoc cluster="$CLUSTER" account="$ACCOUNT" format=account,user 2>&1) ||
		fail "sacctmgr list assoc failed: $ASSOC_OUT" slurmdbd
	if ! grep -Fx -- "$ACCOUNT|" >/dev/null <<<"$ASSOC_OUT"; then
		sacctmgr_add "account $ACCOUNT" add account "$ACCOUNT" Cluster="$CLUSTER" Description="slurm lab" Organization=lab
	fi
	for u in "${USERS[@]}"; do
		USER_OUT=$(sacctmgr -n -P list assoc cluster="$CLUSTER" account="$ACCOUNT" user="$u" format=user 2>&1) ||
			fail "sacctmgr list assoc failed: $USER_OUT" slurmdbd
		if ! grep -Fx -- "$u" >/dev/null <<<"$USER_OUT"; then
			sacctmgr_add "user $u in account $ACCOUNT" add user "$u" Account="$ACCOUNT" DefaultAccount="$ACCOUNT" Cluster="$CLUSTER"
		fi
	done

	# ---------------------------------------------------------------- 8. slurmctld
	phase slurmctld slurmctld
	if ((CONF_CHANGED)); then
		stop_all_slurmd # every slurmd, of the old layout and the new one, before slurmctld
	fi
	start_daemon slurmctld "$CONF_CHANGED" slurmdbd
	ctld_ping() { scontrol ping 2>/dev/null | grep -F 'is UP' >/dev/null; }
	wait_until 60 "slurmctld to answer scontrol ping" slurmctld ctld_ping

fi

# ---------------------------------------------------------------- 9. slurmd, node idle
phase "slurmd + node idle" "${SLURMD_KEYS[*]}"
if [[ $ROLE == node ]] && ((CONF_CHANGED)); then
	stop_all_slurmd # a node's slurmd restarts on a changed slurm.conf (on the head, slurmctld's phase does it)
fi
STARTING=()
for i in "${!SLURMD_KEYS[@]}"; do
	key=${SLURMD_KEYS[i]}
	if running_pid "$key"; then continue; fi
	rm -f "${PIDFILE[$key]}"
	if ((NODES == 1 || REMOTE)); then
		/usr/sbin/slurmd || fail "slurmd failed to start" "$key"
	else
		/usr/sbin/slurmd -N "${NODE_NAMES[i]}" || fail "slurmd -N ${NODE_NAMES[i]} failed to start" "$key"
	fi
	STARTING+=("$key")
done
for key in "${STARTING[@]}"; do
	wait_until 30 "$key pid file" "$key" running_pid "$key"
	mark_started "$key" "$RPID"
done
nodes_ready() { # every node idle/mixed/allocated; the others' logs are the ones to show
	local i st ok=1
	WAIT_FAIL_EXTRA="" WAIT_FAIL_LOGS=""
	for i in "${!NODE_NAMES[@]}"; do
		st=$(sinfo -h -n "${NODE_NAMES[i]}" -o %T 2>/dev/null) || st="(sinfo failed)"
		[[ $st =~ ^(idle|mixed|allocated)$ ]] && continue
		ok=0
		WAIT_FAIL_EXTRA+=" ${NODE_NAMES[i]}=${st:-none}"
		WAIT_FAIL_LOGS+=" ${SLURMD_KEYS[i]:-}"
	done
	WAIT_FAIL_EXTRA=" (last state:$WAIT_FAIL_EXTRA)"
	((ok))
}
if ((NODES == 1)); then WHAT="node $HOST"; else WHAT="nodes $NODE_CSV"; fi
if [[ $ROLE != node ]]; then # a node does not wait for the controller, which may come up later
	wait_until 90 "$WHAT to become idle/mixed/allocated" "${SLURMD_KEYS[*]}" nodes_ready
fi
WAIT_FAIL_EXTRA="" WAIT_FAIL_LOGS=""

if ((EMPTY)); then
	phase "empty the queue"
	LEFT=$(squeue -h -t all -o %i 2>/dev/null | sort -un | tr '\n' ' ') || fail "squeue failed"
	if [[ -n ${LEFT// /} ]]; then
		log "cancelling leftover jobs: $LEFT"
		# shellcheck disable=SC2086 # one id per word
		scancel $LEFT 2>/dev/null || true
	fi
	queue_empty() { # squeue -t all lists no job (a cancelled one stays until MinJobAge + a purge pass)
		local left
		left=$(squeue -h -t all -o '%i %T' 2>/dev/null) || left="(squeue failed)"
		WAIT_FAIL_EXTRA=" (still listed: ${left//$'\n'/, })"
		[[ -z $left ]]
	}
	# slurmctld purges every MAX(10, MinJobAge) s, a job MinJobAge s after it ended
	wait_until $((MIN_JOB_AGE + 3 * (MIN_JOB_AGE > 10 ? MIN_JOB_AGE : 10) + 10)) "the queue to be empty" "" queue_empty
	WAIT_FAIL_EXTRA=""
fi
phase "(end)"

# ---------------------------------------------------------------- summary
if [[ $ROLE == node ]]; then
	DAEMONS=(munged slurmd)
	log "node $HOST up: slurmd serves it (controller $CTLD_NAME at $CTLD_ADDR)"
else
	DAEMONS=(munged mariadbd slurmdbd slurmctld "${SLURMD_KEYS[@]}")
	UP=$(sinfo -h -n "$NODE_CSV" -o '%P %T %c cpus %N')
	log "cluster up: ${UP//$'\n'/; }"
fi
for n in "${DAEMONS[@]}"; do
	running_pid "$n" || fail "$n is not running any more" "$n"
	m=""
	if [[ -f $MARK/$n ]]; then read -r m 2>/dev/null <"$MARK/$n" || true; fi
	if [[ $m == "$RPID" ]]; then
		log "  $n pid $RPID (started by slurm-up)"
	else
		[[ -z $m ]] || rm -f "$MARK/$n" # stale marker: that pid is gone
		log "  $n pid $RPID (not started by slurm-up)"
	fi
done
echo "timings:"
TOTAL=0
for p in "${PHASES[@]}"; do
	us=${PHASE_US[$p]:-0}
	TOTAL=$((TOTAL + us))
	printf '  %-30s%6.2fs\n' "$p" "$(printf '%d.%06d' $((us / 1000000)) $((us % 1000000)))"
done
printf '  %-30s%6.2fs\n' total "$(printf '%d.%06d' $((TOTAL / 1000000)) $((TOTAL % 1000000)))"
