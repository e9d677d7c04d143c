#!/usr/bin/env bash
# ci/docker-up.sh - install (when missing) and start a Docker engine of Debian's packages
# (docker.io: containerd + dockerd as plain background daemons under recorded pids, no systemd),
# and build the base image dispatch/bookworm-min from debootstrap --variant=minbase bookworm +
# docker import when the engine lacks it. Nothing is pulled from a registry. Must run as root.
# Idempotent: with the engine up and the image present, a rerun only reports. Prints the base
# image's content tag on stdout (the only thing it prints there; its log goes to stderr).
#
# Reference: ../shared/reference/docker-engine.md. Stop with ci/docker-down.sh.
set -Eeuo pipefail
export LC_ALL=C
umask 022

PROG=docker-up
T0=${EPOCHREALTIME/./}

usage() {
	cat <<'EOF'
Usage: ci/docker-up.sh [options]

Install Debian's docker.io and debootstrap (apt-get, --no-install-recommends, nothing
auto-started) when dockerd, containerd or debootstrap is missing; record the host's state the
engine will change (iptables rules and chains with the FORWARD policy, whether docker0 exists,
net.ipv4.ip_forward, the mounts, the engine's paths) unless a snapshot of this boot is already
kept; start containerd, then dockerd --containerd=/run/containerd/containerd.sock, each with
setsid nohup under a recorded pid, unless it already answers; wait until `docker version`
answers the server; then build the base image unless the engine has it:

    debootstrap --variant=minbase bookworm ROOTFS MIRROR
    tar -C ROOTFS -c . | docker import - dispatch/bookworm-min:<hash>

<hash> is the first 12 hex digits of the sha256 of the debootstrap inputs (suite, variant,
architecture, components, debootstrap's version, the import's changes), so the image is built
once per recipe; dispatch/bookworm-min:latest is moved to it. The image carries the label
org.dispatch.built-by=docker-up, by which ci/docker-down.sh --purge finds it. Prints
dispatch/bookworm-min:<hash> on stdout.

An engine that answers but was not started by docker-up is used as it is (nothing recorded,
nothing started; ci/docker-down.sh leaves it alone).

Options (environment variable in brackets):
  --state-dir DIR  [DISPATCH_DOCKER_STATE] state directory (default /var/lib/dispatch-docker):
                   containerd.log, dockerd.log, the recorded pids containerd.pid and dockerd.pid,
                   host/ (the snapshot of the host before the engine), created (the data paths
                   the engine made, for docker-down --purge), image (the content tag)
  --mirror URL     [DISPATCH_DOCKER_MIRROR] the Debian mirror for debootstrap (default: the
                   first URI of the host's apt sources, /etc/apt/sources.list and
                   /etc/apt/sources.list.d/, that serves bookworm main)
  --timeout N      [DISPATCH_DOCKER_TIMEOUT] seconds to wait for each daemon to answer, 1..600
                   (default 60)
  --no-install     [DISPATCH_DOCKER_INSTALL=0] never run apt-get; fail if a package is missing
  --no-image       [DISPATCH_DOCKER_IMAGE=0] start the engine only; build no base image (and
                   print nothing on stdout)
  -h, --help       show this help and exit

Exit status: 0 engine up (and the image present), 1 failure (one line naming the log to read),
2 bad usage.
EOF
}

die_usage() {
	printf '%s: %s (see --help)\n' "$PROG" "$*" >&2
	exit 2
}

STATE=${DISPATCH_DOCKER_STATE:-/var/lib/dispatch-docker}
MIRROR=${DISPATCH_DOCKER_MIRROR:-}
TIMEOUT=${DISPATCH_DOCKER_TIMEOUT:-60}
INSTALL=${DISPATCH_DOCKER_INSTALL:-1}
IMAGE=${DISPATCH_DOCKER_IMAGE:-1}

while (($#)); do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--no-install) INSTALL=0 ;;
	--no-image) IMAGE=0 ;;
	--state-dir | --mirror | --timeout)
		(($# >= 2)) || die_usage "option $1 needs a value"
		case $1 in --state-dir) STATE=$2 ;; --mirror) MIRROR=$2 ;; --timeout) TIMEOUT=$2 ;; esac
		shift
		;;
	--state-dir=*) STATE=${1#*=} ;;
	--mirror=*) MIRROR=${1#*=} ;;
	--timeout=*) TIMEOUT=${1#*=} ;;
	*) die_usage "unknown argument: $1" ;;
	esac
	shift
done

[[ $STATE == /?* && $STATE != *[[:space:]]* && $STATE != */ ]] ||
	die_usage "bad --state-dir/DISPATCH_DOCKER_STATE '$STATE' (want an absolute path without spaces or trailing /)"
if [[ ! $TIMEOUT =~ ^[1-9][0-9]{0,2}$ ]] || ((TIMEOUT > 600)); then
	die_usage "bad --timeout/DISPATCH_DOCKER_TIMEOUT '$TIMEOUT' (want an integer 1..600)"
fi
[[ -z $MIRROR || $MIRROR =~ ^(https?|file)://[^[:space:]\'\"]+$ ]] ||
	die_usage "bad --mirror/DISPATCH_DOCKER_MIRROR '$MIRROR' (want an http://, https:// or file:// URL)"
[[ $INSTALL == [01] ]] || die_usage "bad DISPATCH_DOCKER_INSTALL '$INSTALL' (want 0 or 1)"
[[ $IMAGE == [01] ]] || die_usage "bad DISPATCH_DOCKER_IMAGE '$IMAGE' (want 0 or 1)"

# shellcheck source-path=SCRIPTDIR/.. source=ci/docker-lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/docker-lib.sh"
LOG_FD=2
need_root "it installs packages, starts system daemons and changes the host's network"
# the daemons must not inherit a caller's descriptors (a held flock, the pipe of a $(...))
for fd_path in /proc/"$$"/fd/*; do
	fd=${fd_path##*/}
	if ((fd > 2 && fd != 255)); then eval "exec $fd>&-"; fi
done

fail() { # one line: what failed and where to read more
	elapsed
	printf '[%s %7.2fs] ERROR: %s\n' "$PROG" "$ELAPSED" "$*" >&2
	exit 1
}

POLICY_CREATED=0
BUILD_DIR=""
cleanup_build() { # unmount whatever debootstrap left mounted in the rootfs, then remove it
	local m
	[[ -n $BUILD_DIR && -d $BUILD_DIR ]] || return 0
	while read -r m; do umount -l -- "$m" 2>/dev/null || true; done < <(
		awk -v d="$BUILD_DIR/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r
	)
	rm -rf --one-file-system -- "$BUILD_DIR"
	BUILD_DIR=""
}
on_exit() {
	local rc=$?
	if ((POLICY_CREATED)); then rm -f /usr/sbin/policy-rc.d; fi
	cleanup_build
	return "$rc"
}
trap on_exit EXIT

install -d -m 0755 -- "$STATE" "$STATE/run"
exec 9>"$STATE/lock"
flock -w 600 9 || fail "another docker-up or docker-down holds $STATE/lock"

# ---------------------------------------------------------------- 1. packages
step
MISSING=()
command -v dockerd >/dev/null 2>&1 || MISSING+=(docker.io)
command -v containerd >/dev/null 2>&1 || MISSING+=(containerd)
command -v debootstrap >/dev/null 2>&1 || MISSING+=(debootstrap)
command -v iptables-save >/dev/null 2>&1 || MISSING+=(iptables)
if ((${#MISSING[@]})); then
	((INSTALL)) || fail "missing: ${MISSING[*]} (--no-install: not installing; apt-get install docker.io debootstrap)"
	log "installing: docker.io debootstrap (missing: ${MISSING[*]})"
	export DEBIAN_FRONTEND=noninteractive
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then # nothing auto-starts
		POLICY_CREATED=1
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 0755 /usr/sbin/policy-rc.d
	fi
	APT_OPTS=(-y -q --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
	APT_LOG=$STATE/apt.log
	if ! apt-cache policy docker.io 2>/dev/null | grep -E '^[[:space:]]*Candidate: [^(]' >/dev/null; then
		log "apt lists lack docker.io: apt-get update"
		apt-get update -q >>"$APT_LOG" 2>&1 || log "apt-get update failed (continuing; see $APT_LOG)"
	fi
	if ! apt-get install "${APT_OPTS[@]}" docker.io debootstrap >>"$APT_LOG" 2>&1; then
		log "apt-get install failed: apt-get update, then one retry"
		apt-get update -q >>"$APT_LOG" 2>&1 || log "apt-get update failed (continuing)"
		apt-get install "${APT_OPTS[@]}" docker.io debootstrap >>"$APT_LOG" 2>&1 ||
			fail "apt-get install docker.io debootstrap failed twice; see $APT_LOG"
	fi
	for c in dockerd containerd debootstrap iptables-save; do
		command -v "$c" >/dev/null 2>&1 || fail "$c still missing after apt-get install; see $APT_LOG"
	done
	done_step "installed docker.io $(dpkg-query -W -f='${Version}' docker.io)," \
		"containerd $(dpkg-query -W -f='${Version}' containerd), debootstrap $(dpkg-query -W -f='${Version}' debootstrap)"
else
	done_step "packages present: docker.io $(dpkg-query -W -f='${Version}' docker.io 2>/dev/null || echo '?')," \
		"debootstrap $(dpkg-query -W -f='${Version}' debootstrap 2>/dev/null || echo '?')"
fi

# ---------------------------------------------------------------- 2. the engine
server_version() { docker version --format '{{.Server.Version}}' 2>/dev/null; }
server_answers() { server_version >/dev/null; }
containerd_answers() { [[ -S $CONTAINERD_SOCK ]] && ctr --address "$CONTAINERD_SOCK" version >/dev/null 2>&1; }
SNAPPED=0
snapshot_first() { # before the first daemon docker-up starts: record the host, unless kept
	((SNAPPED == 0)) || return 0
	SNAPPED=1
	if snapshot_valid; then
		log "host snapshot of this boot kept from an earlier docker-up ($STATE/host)"
		return 0
	fi
	step
	take_snapshot
	done_step "recorded the host: FORWARD policy $(awk '$1 == ":FORWARD" {print $2; exit}' "$STATE/host/iptables" | grep . || echo 'none (no filter table)')," \
		"$(grep -c . "$STATE/host/iptables" || true) iptables lines, docker0 $(grep -qx docker0 "$STATE/host/links" && echo present || echo absent)," \
		"ip_forward $(<"$STATE/host/ip_forward") ($STATE/host)"
}
launch() { # daemon log args...: setsid nohup <daemon> args >log 2>&1, the pid recorded
	local name=$1 logfile=$2 pid
	shift 2
	(cd / && exec setsid nohup "$name" "$@" </dev/null >>"$logfile" 2>&1 9>&-) &
	pid=$!
	record_pid "$name" "$pid"
	LAUNCHED=$pid
}
started_alive() { # pid: the process exists and is no zombie (its comm may still be setsid/nohup)
	local stat=""
	read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
	stat=${stat##*) }
	[[ ${stat%% *} != Z ]]
}
wait_for() { # daemon log what command...: poll every 0.1 s, bounded by TIMEOUT
	local name=$1 logfile=$2 what=$3 deadline
	shift 3
	now_us
	deadline=$((NOW_US + TIMEOUT * 1000000))
	until "$@"; do
		started_alive "$LAUNCHED" || fail "$name (pid $LAUNCHED) exited before $what; see $logfile"
		now_us
		((NOW_US < deadline)) || fail "$name (pid $LAUNCHED) did not answer $what within ${TIMEOUT}s; see $logfile"
		sleep 0.1
	done
	recorded "$name" || fail "pid $LAUNCHED is not a live $name (/proc/$LAUNCHED/comm); see $logfile"
}

if VERSION=$(server_version) && [[ -n $VERSION ]]; then
	if recorded dockerd; then
		log "engine already up: dockerd $VERSION (pid $RPID, started by docker-up)"
	else
		log "engine already up: dockerd $VERSION, not started by docker-up (used as it is; docker-down leaves it alone)"
	fi
	if recorded containerd; then log "containerd (pid $RPID, started by docker-up) running"; fi
else
	if recorded dockerd; then
		fail "dockerd (pid $RPID, started by docker-up) runs but docker version does not answer; see $STATE/dockerd.log"
	fi
	# containerd
	if recorded containerd; then
		log "containerd already running (pid $RPID, started by docker-up)"
	elif containerd_answers; then
		log "containerd at $CONTAINERD_SOCK already answers, not started by docker-up: used as it is"
	else
		snapshot_first
		step
		launch containerd "$STATE/containerd.log"
		wait_for containerd "$STATE/containerd.log" "at $CONTAINERD_SOCK" containerd_answers
		done_step "started containerd (pid $LAUNCHED), answering at $CONTAINERD_SOCK"
	fi
	# dockerd
	snapshot_first
	step
	launch dockerd "$STATE/dockerd.log" --containerd="$CONTAINERD_SOCK" --pidfile="$STATE/run/dockerd.pid"
	wait_for dockerd "$STATE/dockerd.log" "docker version" server_answers
	VERSION=$(server_version)
	done_step "started dockerd $VERSION (pid $LAUNCHED): docker version answers the server" \
		"(storage $(docker info --format '{{.Driver}}' 2>/dev/null || echo '?'))"
fi

# ---------------------------------------------------------------- 3. the base image
((IMAGE)) || {
	log "done: engine up (--no-image: no base image)"
	exit 0
}
find_mirror() { # the first URI of the host's apt sources that serves bookworm main
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] || continue
		awk '$1 == "deb" {
			i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
			if ($(i + 1) == "bookworm") for (j = i + 2; j <= NF; j++) if ($j == "main") { print $i; exit }
		}' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] || continue
		awk 'function flush() { if (types ~ /(^| )deb( |$)/ && suites ~ /(^| )bookworm( |$)/ && comps ~ /(^| )main( |$)/ && enabled != "no") { split(uris, u, " "); print u[1]; found = 1 } types = suites = comps = uris = enabled = "" }
			/^#/ { next }
			/^[[:space:]]*$/ { flush(); if (found) exit; next }
			{ k = tolower($1); sub(/:$/, "", k); $1 = ""; sub(/^ +/, "") }
			k == "types" { types = $0 } k == "suites" { suites = $0 } k == "components" { comps = $0 }
			k == "uris" { uris = $0 } k == "enabled" { enabled = tolower($0) }
			END { if (!found) flush() }' "$f"
	done
}
ARCH=$(dpkg --print-architecture)
DEBOOTSTRAP_VERSION=$(dpkg-query -W -f='${Version}' debootstrap 2>/dev/null || debootstrap --version)
IMPORT_CHANGES=('CMD ["/bin/bash"]' "LABEL $BUILT_BY_LABEL")
RECIPE=$(printf '%s\n' "recipe 1" "suite bookworm" "variant minbase" "arch $ARCH" "components main" \
	"debootstrap $DEBOOTSTRAP_VERSION" "${IMPORT_CHANGES[@]/#/change }")
HASH=$(printf '%s\n' "$RECIPE" | sha256sum)
TAG=$IMAGE_REPO:${HASH:0:12}

step
if docker image inspect "$TAG" >/dev/null 2>&1; then
	done_step "base image $TAG present ($(docker image inspect --format '{{.Size}}' "$TAG" | awk '{printf "%d MB", $1 / 1e6}'))"
else
	if [[ -z $MIRROR ]]; then MIRROR=$(find_mirror | head -n 1); fi
	[[ -n $MIRROR ]] || fail "no apt source serves bookworm main: give --mirror URL"
	MIRROR=${MIRROR%/}
	log "building $TAG: debootstrap --variant=minbase bookworm from $MIRROR (log $STATE/debootstrap.log)"
	BUILD_DIR=$(mktemp -d "$STATE/build.XXXXXX")
	debootstrap --variant=minbase --arch="$ARCH" --components=main bookworm "$BUILD_DIR/rootfs" "$MIRROR" \
		>"$STATE/debootstrap.log" 2>&1 || fail "debootstrap failed; see $STATE/debootstrap.log"
	done_step "debootstrap: rootfs of $(du -sm "$BUILD_DIR/rootfs" | cut -f1) MB"
	step
	CHANGE_ARGS=()
	for c in "${IMPORT_CHANGES[@]}"; do CHANGE_ARGS+=(--change "$c"); done
	tar --numeric-owner -C "$BUILD_DIR/rootfs" -c . |
		docker import "${CHANGE_ARGS[@]}" -m "debootstrap --variant=minbase bookworm (ci/docker-up.sh)" - "$TAG" \
			>"$STATE/import.log" 2>&1 || fail "docker import of the rootfs failed; see $STATE/import.log"
	cleanup_build
	done_step "imported $TAG ($(docker image inspect --format '{{.Size}}' "$TAG" | awk '{printf "%d MB", $1 / 1e6}'))"
fi
if [[ $(docker image inspect --format '{{.Id}}' "$IMAGE_ALIAS" 2>/dev/null) != "$(docker image inspect --format '{{.Id}}' "$TAG")" ]]; then
	docker tag "$TAG" "$IMAGE_ALIAS"
	log "tagged $IMAGE_ALIAS -> $TAG"
fi
printf '%s\n' "$TAG" >"$STATE/image"
log "done: engine up, base image $TAG (alias $IMAGE_ALIAS)"
printf '%s\n' "$TAG"
