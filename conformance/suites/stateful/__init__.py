"""Stateful (``STATE-``): random programs of submit, find, hold, release, requeue, stop and the
harness's fault intents, driven by a Hypothesis state machine, against the invariants of seeds
000 and 001 and DESIGN §4.

The suite is split along its parts: ``model`` (the foci, the rules each draws from, what a
program knows), ``machine`` (the rule-based state machine), ``driver`` (Hypothesis, seeds,
budgets, the failure report) and ``suite`` (the registered checks).

Each check runs the same machine and holds it to one invariant, so that a failure names the
rule it breaks:

- STATE-001: no write after a failed identity check (a ref whose object is gone acts on
  nothing: hold, release and requeue raise NotFound, stop succeeds, and an object of ours that
  took the id is left exactly as it was; any write acts only on the object its ref names);
- STATE-002: no hold decoded to the wrong instance (every hold shown is the one placed on that
  very object and not released; a placed hold stays shown, across a reopen too);
- STATE-003: no repeated attempt, and each object's epochs strictly increase (every rank of
  every execution sees the four ``DISPATCH_`` variables);
- STATE-004: find matches exactly (look-alikes are not the job's; an unparsable identity or none is
  foreign, never dropped; an identity lost from history is unknown, not foreign);
- STATE-005: a requeue keeps the ref valid and moves submit forward, never back;
- STATE-006: a start retried after a lost reply makes no second object.

Each focus draws its programs from the rules that can matter to its invariant (``USES``).

Programs are generated from the run's seed (``hypothesis.seed``), with no example database, so
a seed replays the same programs; a failure's message carries the seed and the shrunk program.
Each example runs on a fresh backend of the harness. A fault the harness cannot inject is left
out of the programs (noted in the program, never a pass in its place): a check whose invariant
no program could exercise is skipped with the reason.
"""

from conformance.suites.stateful import suite

__all__ = ["suite"]
