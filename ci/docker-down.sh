#!/usr/bin/env bash
# ci/docker-down.sh - stop the Docker engine ci/docker-up.sh started and undo what it changed on
# the host. Only the daemons whose pids docker-up recorded (and whose /proc/<pid>/comm still names
# the daemon) are signalled; nothing is ever stopped by name. The host is restored from the
# snapshot docker-up took before it started a daemon.
set -Eeuo pipefail
export LC_ALL=C

PROG=docker-down
T0=${EPOCHREALTIME/./}

usage() {
	cat <<'EOF'
Usage: ci/docker-down.sh [--state-dir DIR] [--purge]

With the dockerd docker-up started still running: remove every container of the engine
(docker rm -f -v) and every user-defined network. Then stop dockerd, then containerd, each by
its recorded pid (DIR/dockerd.pid, DIR/containerd.pid): SIGTERM, up to 30 s, then SIGKILL.
  - no record, or a record whose pid is gone or is not the daemon: nothing is signalled
    ("not started by docker-up, left alone");
  - a dockerd that docker-up did not start keeps its containers, networks and images.
Then undo, from the snapshot docker-up took (DIR/host), what the engine changed on the host: the
iptables rules and chains it added (those naming DOCKER*, docker0 or br-<id>) and the FORWARD
policy, the links it added (docker0, br-<id>, veth*), net.ipv4.ip_forward, the mounts under
/run/docker, /run/containerd, /var/lib/docker and /var/lib/containerd (the netns mount
/run/docker/netns/default among them), and the runtime paths /run/docker, /run/containerd and
/run/docker.sock; then compare the host with the snapshot and print every difference. The
snapshot is dropped once the host matches it. Each step prints its time. Idempotent. Must run as
root.

By default the engine's data is kept, so the next docker-up is warm: its images (the base image
dispatch/bookworm-min included) and volumes in /var/lib/docker, /var/lib/containerd and
/etc/docker/key.json, and DIR with the daemons' logs. The Debian packages are always kept.

Options (environment variable in brackets):
  --state-dir DIR  [DISPATCH_DOCKER_STATE] docker-up's state directory (default
                   /var/lib/dispatch-docker)
  --purge          also remove the images docker-up built (label org.dispatch.built-by=docker-up)
                   before stopping dockerd, then, with both daemons stopped, the data paths
                   /var/lib/docker, /var/lib/containerd and /etc/docker/key.json that did not exist
                   before docker-up first started the engine (listed in DIR/created; every image
                   and volume of the engine goes with them), and DIR; refused while a daemon
                   still runs
  -h, --help       show this help and exit
Exit status: 0 done (the host matches the snapshot), 1 failure or a difference left, 2 bad usage.
EOF
}

STATE=${DISPATCH_DOCKER_STATE:-/var/lib/dispatch-docker}
PURGE=0
while (($#)); do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--purge) PURGE=1 ;;
	--state-dir)
		if (($# < 2)); then
			printf '%s: option %s needs a value (see --help)\n' "$PROG" "$1" >&2
			exit 2
		fi
		STATE=$2
		shift
		;;
	--state-dir=*) STATE=${1#*=} ;;
	*)
		printf '%s: unknown argument: %s (see --help)\n' "$PROG" "$1" >&2
		exit 2
		;;
	esac
	shift
done
if [[ $STATE != /?* || $STATE == *[[:space:]]* || $STATE == */ ]]; then
	printf '%s: bad --state-dir/DISPATCH_DOCKER_STATE %s (want an absolute path without spaces or trailing /; see --help)\n' "$PROG" "$STATE" >&2
	exit 2
fi

# shellcheck source-path=SCRIPTDIR/.. source=ci/docker-lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/docker-lib.sh"
need_root "it signals system daemons and changes the host's network"

if [[ ! -d $STATE ]]; then
	log "no state directory $STATE: docker-up started nothing; nothing to do"
	log "done"
	exit 0
fi
exec 9>"$STATE/lock"
flock -w 600 9 || {
	log "ERROR: another docker-up or docker-down holds $STATE/lock" >&2
	exit 1
}

RC=0
problem() {
	log "ERROR: $*" >&2
	RC=1
}

# ---------------------------------------------------------------- 1. the engine's objects
if recorded dockerd; then
	DPID=$RPID
	if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
		step
		mapfile -t ids < <(docker ps -aq)
		if ((${#ids[@]})); then
			docker rm -f -v "${ids[@]}" >/dev/null || problem "docker rm -f failed"
		fi
		done_step "removed ${#ids[@]} container(s)"
		step
		mapfile -t ids < <(docker network ls -q --filter type=custom)
		if ((${#ids[@]})); then
			docker network rm "${ids[@]}" >/dev/null || problem "docker network rm failed"
		fi
		done_step "removed ${#ids[@]} user-defined network(s)"
		if ((PURGE)); then
			step
			mapfile -t ids < <(docker images -q --filter "label=$BUILT_BY_LABEL" | sort -u)
			if ((${#ids[@]})); then
				# an image built FROM the base keeps its layers until the data root goes below
				docker rmi -f "${ids[@]}" >/dev/null 2>&1 || log "some images kept by dependent images (removed with the data root)"
			fi
			done_step "removed ${#ids[@]} image(s) docker-up built"
		else
			log "images and volumes kept (no --purge)"
		fi
	else
		log "dockerd (pid $DPID) does not answer: its containers and networks go when it stops"
	fi
elif docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
	log "dockerd: not started by docker-up, left alone (with its containers, networks and images)"
else
	log "dockerd: not started by docker-up, left alone (not running)"
fi

# ---------------------------------------------------------------- 2. the daemons
for d in dockerd containerd; do
	if recorded "$d"; then
		log "stopping $d (pid $RPID)"
		stop_recorded "$d" || problem "$d (pid $RPID) survived SIGKILL; its record is kept"
	elif [[ -f $STATE/$d.pid ]]; then
		rm -f "$STATE/$d.pid"
		log "$d: stale record (not a live $d of this boot): removed, nothing signalled"
	fi
done
live_shims() { # SHIMS=" <pid>..." of the containerd shims still alive (zombies not counted)
	local f c p
	SHIMS=""
	for f in /proc/[0-9]*/comm; do
		c=""
		read -r c 2>/dev/null <"$f" || continue
		[[ $c == containerd-shim* ]] || continue
		p=${f#/proc/}
		p=${p%/comm}
		if pid_alive "$p" "$c"; then SHIMS+=" $p"; fi
	done
}
# a shim exits once its container is gone; give the last ones 5 s
for ((i = 0; i < 50; i++)); do
	live_shims
	[[ -n $SHIMS ]] || break
	sleep 0.1
done
if [[ -n $SHIMS ]]; then log "WARNING: containerd shims still running (pids$SHIMS): not signalled"; fi

# ---------------------------------------------------------------- 3. the host
ENGINE_LIVE=""
if recorded dockerd || recorded containerd; then ENGINE_LIVE="a daemon docker-up started"; fi
if docker version >/dev/null 2>&1; then ENGINE_LIVE="a dockerd"; fi
if ! snapshot_valid; then
	log "no host snapshot of this boot in $STATE/host: nothing to restore"
elif [[ -n $ENGINE_LIVE ]]; then
	problem "$ENGINE_LIVE still runs: the host is not restored (snapshot kept in $STATE/host)"
else
	H=$STATE/host
	# mounts: the engine's that were not there before, deepest first
	step
	n=0
	while read -r m; do
		[[ -n $m ]] || continue
		if umount -- "$m" 2>/dev/null || umount -l -- "$m" 2>/dev/null; then
			n=$((n + 1))
		else
			problem "cannot unmount $m"
		fi
	done < <(mounts_dump | grep -E "$ENGINE_MOUNT_RE" | grep -vxF -f "$H/mounts" | sort -r || true)
	done_step "unmounted $n mount(s) of the engine"

	# iptables: the engine's new rules, then its new chains, then the FORWARD policy
	step
	nr=0 nc=0
	if command -v iptables-save >/dev/null 2>&1; then
		now_rules=$(iptables_dump)
		table=""
		declare -a new_chains=()
		while IFS= read -r line; do
			case $line in
			\**) table=${line#\*} ;;
			:*)
				chain=${line%% *}
				chain=${chain#:}
				if [[ $chain == DOCKER* ]] && ! grep -qE "^:$chain " < <(awk -v t="*$table" '$0 == t {on = 1; next} /^\*/ {on = 0} on' "$H/iptables"); then
					new_chains+=("$table $chain")
				fi
				;;
			-A\ *)
				if [[ $line =~ $ENGINE_RULE_RE ]] && ! awk -v t="*$table" -v l="$line" '$0 == t {on = 1; next} /^\*/ {on = 0} on && $0 == l {f = 1} END {exit !f}' "$H/iptables"; then
					if [[ $line == *[\'\"\\]* ]]; then
						problem "iptables rule with quotes left alone: -t $table $line"
						continue
					fi
					read -r -a spec <<<"${line#-A }"
					if iptables -w -t "$table" -D "${spec[@]}" 2>/dev/null; then
						nr=$((nr + 1))
					else
						problem "cannot delete iptables rule: -t $table $line"
					fi
				fi
				;;
			esac
		done <<<"$now_rules"
		for x in "${new_chains[@]}"; do iptables -w -t "${x% *}" -F "${x#* }" 2>/dev/null || true; done
		for x in "${new_chains[@]}"; do
			if iptables -w -t "${x% *}" -X "${x#* }" 2>/dev/null; then
				nc=$((nc + 1))
			else
				problem "cannot delete iptables chain -t ${x% *} ${x#* }"
			fi
		done
		# a table the engine's rules created, empty again: nft can drop it (iptables cannot)
		if command -v nft >/dev/null 2>&1; then
			for t in $(iptables_dump | sed -n 's/^\*//p'); do
				if ! grep -qxF "*$t" "$H/iptables" && [[ -z $(iptables_effective <(iptables_dump) | awk -v t="$t" '$1 == t') ]]; then
					nft delete table ip "$t" 2>/dev/null && log "dropped the empty table ip $t (nft)"
				fi
			done
		fi
		before=$(awk '$1 == ":FORWARD" {print $2; exit}' "$H/iptables")
		now=$(iptables_dump | awk '$1 == ":FORWARD" {print $2; exit}')
		before=${before:-ACCEPT} # no filter table before: nothing filtered, i.e. ACCEPT
		policy="FORWARD policy $now"
		if [[ -n $now && $now != "$before" ]]; then
			iptables -w -t filter -P FORWARD "$before" || problem "cannot set the FORWARD policy to $before"
			policy="FORWARD policy $now -> $before"
		fi
	else
		policy="no iptables"
	fi
	done_step "iptables: deleted $nr rule(s) and $nc chain(s) of the engine, $policy"

	# links, ip_forward
	step
	links=()
	while read -r l; do
		[[ -n $l ]] || continue
		if ip link delete "$l" 2>/dev/null; then links+=("$l"); else problem "cannot delete link $l"; fi
	done < <(links_dump | grep -E "$ENGINE_LINK_RE" | grep -vxF -f "$H/links" || true)
	fwd_before=$(<"$H/ip_forward") fwd_now=$(ip_forward_now)
	fwd="net.ipv4.ip_forward $fwd_now"
	if [[ $fwd_now != "$fwd_before" ]]; then
		if printf '%s\n' "$fwd_before" >/proc/sys/net/ipv4/ip_forward; then
			fwd="net.ipv4.ip_forward $fwd_now -> $fwd_before"
		else
			problem "cannot set net.ipv4.ip_forward to $fwd_before"
		fi
	fi
	done_step "deleted ${#links[@]} link(s) the engine added: ${links[*]:-none}; $fwd"

	# the engine's runtime paths that were not there before (its data paths: section 4)
	step
	removed=()
	for p in "${RUNTIME_PATHS[@]}"; do
		if [[ -e $p || -L $p ]] && ! grep -qxF -- "$p" "$H/paths"; then
			if rm -rf --one-file-system -- "$p"; then removed+=("$p"); else problem "cannot remove $p"; fi
		fi
	done
	done_step "removed ${#removed[@]} runtime path(s) the engine made: ${removed[*]:-none}"

	# compare with the snapshot
	step
	diffs=0
	report_diff() { # what before-file now-text
		local d
		d=$(diff <(printf '%s\n' "$3" | sed '/^$/d') <(sed '/^$/d' "$2") || true)
		[[ -n $d ]] || return 0
		diffs=$((diffs + 1))
		log "DIFFERENT $1 ('<' now, '>' before):"
		printf '%s\n' "$d" | grep '^[<>]' | sed 's/^/    /' >&"$LOG_FD"
	}
	report_diff "iptables (ignoring empty ACCEPT tables)" <(iptables_effective "$H/iptables") "$(iptables_effective <(iptables_dump))"
	report_diff links "$H/links" "$(links_dump)"
	report_diff "net.ipv4.ip_forward" "$H/ip_forward" "$(ip_forward_now)"
	report_diff mounts "$H/mounts" "$(mounts_dump)"
	left=()
	for p in "${RUNTIME_PATHS[@]}"; do
		if [[ -e $p || -L $p ]] && ! grep -qxF -- "$p" "$H/paths"; then left+=("$p"); fi
	done
	if ((${#left[@]})); then
		diffs=$((diffs + 1))
		log "DIFFERENT engine runtime paths: still there: ${left[*]}"
	fi
	if ((diffs)); then
		problem "the host differs from the snapshot in $diffs respect(s); snapshot kept in $H"
		done_step "compared the host with the snapshot"
	else
		rm -rf -- "$H"
		done_step "the host matches the snapshot (iptables, links, ip_forward, mounts, paths): snapshot dropped"
	fi
fi

# ---------------------------------------------------------------- 4. the engine's data
made=()
if [[ -s $STATE/created ]]; then
	while read -r p; do
		if [[ -n $p && (-e $p || -L $p) ]]; then made+=("$p"); fi
	done <"$STATE/created"
fi
if ((!PURGE)); then
	if ((${#made[@]})); then log "kept the engine's data: ${made[*]} (--purge removes it)"; fi
elif [[ -n $ENGINE_LIVE ]]; then
	problem "--purge refused: $ENGINE_LIVE still runs (${made[*]:-no data path} and $STATE kept)"
else
	step
	for p in "${made[@]}"; do
		rm -rf --one-file-system -- "$p" || problem "cannot remove $p"
	done
	left=()
	for p in "${made[@]}"; do
		if [[ -e $p || -L $p ]]; then left+=("$p"); fi
	done
	if ((${#left[@]})); then problem "still there: ${left[*]}"; fi
	done_step "removed the engine's data: ${made[*]:-nothing}"
	if ((RC)); then
		log "--purge: $STATE kept (something above failed)"
	else
		rm -rf --one-file-system -- "$STATE"
		log "removed $STATE"
	fi
fi
log "done"
exit "$RC"
