#!/usr/bin/env bash
# ci/slurm-node-entrypoint.sh - the command of every container of the slurm-containers harness
# (adapters/slurm/testing/containers.py): install the cluster's munge key from /cluster, bring this
# host's part of the cluster up with ci/slurm-up.sh (--role head or node, the other flags passed as
# they are), then, on the head, start sshd with the cluster's authorized key; print the ready line
# and stay up. A failing step ends the container, its log saying why.
#
# Usage: slurm-node-entrypoint.sh head|node [slurm-up.sh flags...]
# /cluster (read-only) holds munge.key and, for the head, authorized_keys. Nothing secret is in the
# image: a container that starts again (a node brought back after its loss) runs this again over
# its old filesystem, which slurm-up.sh's idempotence covers.
set -Eeuo pipefail
export LC_ALL=C

role=${1:-}
case $role in
head | node) shift ;;
*)
	echo "slurm-node-entrypoint: want head or node as the first argument, not '$role'" >&2
	exit 2
	;;
esac
here=$(dirname -- "${BASH_SOURCE[0]}")

install -d -m 0700 -o munge -g munge /etc/munge
install -o munge -g munge -m 0400 /cluster/munge.key /etc/munge/munge.key
"$here/slurm-up.sh" --no-install --role "$role" "$@"

if [[ $role == head ]]; then
	install -d -m 0755 /run/sshd
	ssh-keygen -A >/dev/null
	install -d -m 0700 /root/.ssh
	install -m 0600 /cluster/authorized_keys /root/.ssh/authorized_keys
	/usr/sbin/sshd
fi
echo "dispatch-kit: $role $(hostname -s) up"
exec sleep infinity
