# shellcheck shell=bash disable=SC2034 # the constants are used by the sourcing scripts
# ci/docker-lib.sh - what ci/docker-up.sh and ci/docker-down.sh share: the state directory's layout,
# the log lines with their times, the liveness check of a recorded pid, the one way a daemon is
# stopped (by its recorded pid, never by name), and the snapshot of the host state the engine
# changes (iptables, docker0 and other links, net.ipv4.ip_forward, mounts, the engine's paths).
# Sourced, not run. The sourcing script sets PROG (the log prefix), T0 (its start,
# ${EPOCHREALTIME/./}) and STATE (the state directory) first.

# ---------------------------------------------------------------- layout
# $STATE/containerd.log, dockerd.log      the daemons' output
# $STATE/containerd.pid, dockerd.pid      "started by docker-up": "<pid> <boot id>"
# $STATE/run/                             dockerd's own --pidfile
# $STATE/host/                            the host as it was before docker-up started a daemon
#                                         (boot_id iptables links ip_forward mounts paths)
# $STATE/created                          the data paths (/var/lib/docker ...) docker-up's engine
#                                         created; kept until docker-down --purge removes them
# $STATE/image                            the content tag of the base image docker-up built
# $STATE/lock                             held (flock) while a docker-up or docker-down runs
CONTAINERD_SOCK=/run/containerd/containerd.sock
# paths the engine creates; docker-down removes the runtime ones (and with --purge the data ones)
# when the snapshot says they were absent
RUNTIME_PATHS=(/run/docker /run/containerd /run/docker.sock)
DATA_PATHS=(/var/lib/docker /var/lib/containerd /etc/docker/key.json)
IMAGE_REPO=dispatch/bookworm-min
IMAGE_ALIAS=$IMAGE_REPO:latest
BUILT_BY_LABEL=org.dispatch.built-by=docker-up
# what the engine adds to the host: its chains, its bridges and the veth ends of its containers
ENGINE_RULE_RE='DOCKER|docker0|br-[0-9a-f]{12}'
ENGINE_LINK_RE='^(docker0|br-[0-9a-f]{12}|veth[0-9a-f]+)$'
ENGINE_MOUNT_RE='^(/run/docker|/var/run/docker|/run/containerd|/var/run/containerd|/var/lib/docker|/var/lib/containerd)(/|$)'

BOOT_ID=$(</proc/sys/kernel/random/boot_id)

need_root() { # why
	if ((EUID != 0)); then
		echo "$PROG: must be run as root ($1)" >&2
		exit 1
	fi
}

# ---------------------------------------------------------------- time and log lines
LOG_FD=1 # docker-up sets 2: its standard output carries only the image reference
ELAPSED=0
elapsed() {
	local d=$((${EPOCHREALTIME/./} - T0))
	printf -v ELAPSED '%d.%06d' $((d / 1000000)) $((d % 1000000))
}
log() {
	elapsed
	printf '[%s %7.2fs] %s\n' "$PROG" "$ELAPSED" "$*" >&"$LOG_FD"
}
now_us() { NOW_US=${EPOCHREALTIME/./}; }
secs() { printf -v SECS '%d.%02d' $(($1 / 1000000)) $(($1 % 1000000 / 10000)); } # microseconds
STEP_US=0
step() { now_us; STEP_US=$NOW_US; }                           # start timing a step
done_step() { now_us; secs $((NOW_US - STEP_US)); log "$* (${SECS}s)"; } # message: step over

# ---------------------------------------------------------------- daemons by recorded pid
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
recorded() { # daemon: 0 and RPID=<pid> when $STATE/<daemon>.pid holds a live <daemon> of this boot
	local p="" b=""
	RPID=""
	[[ -s $STATE/$1.pid ]] || return 1
	read -r p b 2>/dev/null <"$STATE/$1.pid" || [[ -n $p ]] || return 1
	[[ $b == "$BOOT_ID" ]] || return 1
	pid_alive "$p" "$1" || return 1
	RPID=$p
}
record_pid() { printf '%s %s\n' "$2" "$BOOT_ID" >"$STATE/$1.pid"; } # daemon pid

stop_recorded() { # daemon: SIGTERM to its recorded pid, wait up to 30 s, SIGKILL, 5 s more;
	# 0 when it is gone (the record removed), 1 when it survived
	local name=$1 pid deadline how=""
	recorded "$name" || return 0
	pid=$RPID
	step
	kill -TERM "$pid" 2>/dev/null || true
	deadline=$((STEP_US + 30 * 1000000))
	while pid_alive "$pid" "$name"; do
		now_us
		if ((NOW_US >= deadline)); then
			[[ -z $how ]] || return 1
			log "$name (pid $pid) still running after 30s: SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			how=" (SIGKILL)"
			deadline=$((NOW_US + 5 * 1000000))
		fi
		sleep 0.1
	done
	rm -f "$STATE/$name.pid"
	done_step "stopped $name (pid $pid)$how"
}

# ---------------------------------------------------------------- the host's state
iptables_dump() { # normalised iptables-save: no comments, no counters; empty without iptables
	command -v iptables-save >/dev/null 2>&1 || return 0
	iptables-save 2>/dev/null | sed -e '/^#/d' -e 's/ \[[0-9]*:[0-9]*\]$//'
}
links_dump() { ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | sort; }
mounts_dump() { awk '{print $5}' /proc/self/mountinfo | sort; }
paths_dump() {
	local p
	for p in "${RUNTIME_PATHS[@]}" "${DATA_PATHS[@]}"; do
		if [[ -e $p || -L $p ]]; then printf '%s\n' "$p"; fi
	done
}
ip_forward_now() { cat /proc/sys/net/ipv4/ip_forward; }

snapshot_valid() { # 0 when $STATE/host is a complete snapshot taken during this boot
	local f b=""
	for f in boot_id iptables links ip_forward mounts paths; do
		[[ -f $STATE/host/$f ]] || return 1
	done
	read -r b <"$STATE/host/boot_id" || return 1
	[[ $b == "$BOOT_ID" ]]
}
take_snapshot() {
	local h=$STATE/host tmp=$STATE/host.new p
	rm -rf -- "$tmp"
	mkdir -p -- "$tmp"
	iptables_dump >"$tmp/iptables"
	links_dump >"$tmp/links"
	ip_forward_now >"$tmp/ip_forward"
	mounts_dump >"$tmp/mounts"
	paths_dump >"$tmp/paths"
	printf '%s\n' "$BOOT_ID" >"$tmp/boot_id" # last: a snapshot without it is incomplete
	# the data paths the engine is about to create outlive the snapshot (a plain docker-down
	# keeps them): $STATE/created remembers them for docker-down --purge
	for p in "${DATA_PATHS[@]}"; do
		if [[ ! -e $p && ! -L $p ]] && ! grep -qxF -- "$p" "$STATE/created" 2>/dev/null; then
			printf '%s\n' "$p" >>"$STATE/created"
		fi
	done
	rm -rf -- "$h"
	mv -- "$tmp" "$h"
}

# iptables rules are compared as a table of (table, line). A table whose built-in chains all
# have policy ACCEPT and no rule filters nothing: it counts as absent (iptables-nft cannot delete
# the empty tables dockerd's rules made it create).
iptables_effective() { # file: the lines of its non-trivial tables, each prefixed by "<table> "
	awk '
		/^\*/ { t = substr($0, 2); n[t] = 0; next }
		/^COMMIT/ { next }
		/^:/ {
			line[t, ++n[t]] = $0
			if (!($2 == "ACCEPT" && $1 ~ /^:(INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING)$/)) keep[t] = 1
			next
		}
		NF { line[t, ++n[t]] = $0; keep[t] = 1 }
		END { for (t in n) if (keep[t]) for (i = 1; i <= n[t]; i++) print t " " line[t, i] }
	' "$1" | sort
}
