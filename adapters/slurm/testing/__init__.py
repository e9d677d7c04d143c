"""The Slurm adapter's conformance harnesses, beside the adapter they test (DESIGN §2, §6).

- :mod:`adapters.slurm.testing.sim`: ``slurm-sim`` and ``slurm-sim-nocomment``, on the Slurm
  simulator (the only modules here that import it);
- :mod:`adapters.slurm.testing.local`: ``slurm-local``, on a real Slurm reached through a
  transport (this host's commands, SSH);
- :mod:`adapters.slurm.testing.containers`: ``slurm-containers`` and ``slurm-containers-ssh``,
  ``slurm-local``'s harness on a multi-node Slurm in containers, with the real loss of a node
  (the optional extra ``containers``);
- :mod:`adapters.slurm.testing.lookalikes` and :mod:`adapters.slurm.testing.transport`: what
  they share: the Slurm encoding of the look-alike intents, and the call faults of a
  transport (a lost reply, a timeout before effect).

They register under the entry-point group ``dispatch.harnesses``; importing this package
imports none of them.
"""
