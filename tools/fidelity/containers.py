"""A Slurm cluster in containers as a fidelity target (:class:`ClusterSlurm`): the scenarios
that lose a node run for real only there (tests/containers records them)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence

from adapters.slurm.testing.containers import HEAD, SHARED_DIR, ContainerNotReady, SlurmCluster
from dispatch_core import Clock
from tools.fidelity.cluster import FidelityError
from tools.fidelity.targets import RealSlurm


class ClusterSlurm(RealSlurm):
    """A started :class:`SlurmCluster`: the head's commands through ``docker exec``, run in a
    scratch directory of the shared directory, as root on the host ``head``; a lost node is a
    container stopped, then started again."""

    can_lose_nodes = True

    def __init__(
        self,
        cluster: SlurmCluster,
        timeout: float = 60.0,
        busy_bound: float = 180.0,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(timeout, busy_bound, clock)
        shutil.rmtree(self.scratch, ignore_errors=True)  # the head's, not this host's
        self.cluster = cluster
        self.transport = cluster.exec_transport()
        made = self.transport.run(["mktemp", "-d", f"{SHARED_DIR}/fid-XXXXXX"], timeout=timeout)
        if made.returncode != 0:
            raise FidelityError(f"mktemp on the head failed: {made.stderr.strip()}")
        self.scratch = made.stdout.strip()

    def close(self) -> None:
        self.transport.run(["rm", "-rf", "--", self.scratch], timeout=self.timeout)

    def command(self, argv: Sequence[str], stdin: str | None) -> subprocess.CompletedProcess[str]:
        wrapped = ["sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", self.scratch, *argv]
        try:
            return self.transport.run(wrapped, stdin=stdin, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(
                list(argv), 124, "", f"fidelity: no answer within {self.timeout:g} s\n"
            )

    def require_commands(self) -> None:
        """The image has them."""

    def identity(self) -> tuple[str, int, str]:
        return "root", 0, HEAD

    def lose_node(self, node: str) -> None:
        """Stop the node's container; return once slurmctld has marked it down."""
        self.cluster.lose(node)
        self._node(lambda: self.cluster.await_node(node, _down, "marked down"))

    def bring_back(self, node: str) -> None:
        """Start the node's container again; return once it is back in the partition."""
        self._node(lambda: self.cluster.bring_back(node))

    @staticmethod
    def _node(act: Callable[[], None]) -> None:
        try:
            act()
        except ContainerNotReady as error:
            raise FidelityError(str(error).splitlines()[0]) from None


def _down(state: str) -> bool:
    return state.startswith("down")
