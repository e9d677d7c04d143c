"""The public names DESIGN §3 fixes are importable from dispatch_core, and the SPI's optional
interfaces are detected with isinstance, as the Go original uses type assertions."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime

import pytest

import dispatch_core
from dispatch_core import spi

# Every name DESIGN §3 lists, importable from dispatch_core itself.
DESIGN_NAMES = [
    "Capability",
    "capabilities",
    "Tristate",
    "Source",
    "Support",
    "RuleKind",
    "Rule",
    "Policy",
    "RuleSupport",
    "Enforcer",
    "JobID",
    "JobSpec",
    "ObjectRef",
    "Plan",
    "DispatchError",
    "Unsupported",
    "Rejected",
    "NotFound",
    "OutcomeUnknown",
    "Conflict",
    "make_plan",
    "accept_unverified",
    "accept_unenforced",
    "with_supervisor",
    "Backend",
    "Holder",
    "Requeuer",
    "NativePolicyCompiler",
    "IdentityWeakener",
    "OutputReader",
    "Preflight",
    "PreflightOptions",
]

# What dispatch_core no longer has: the Slurm adapter's encodings (DESIGN §6, scheduler-neutral).
SLURM_NAMES = [
    "COMMENT_PREFIX",
    "SlurmComment",
    "slurm_comment",
    "parse_slurm_comment",
    "HoldBase",
    "encode_hold",
    "decode_hold",
]


@pytest.mark.parametrize("name", DESIGN_NAMES)
def test_design_name_is_public(name):
    """Each name is an attribute of dispatch_core and listed in its __all__."""
    assert getattr(dispatch_core, name) is not None
    assert name in dispatch_core.__all__


def test_star_import_gives_every_design_name():
    """`from dispatch_core import *` brings every name of DESIGN §3."""
    namespace: dict[str, object] = {}
    exec("from dispatch_core import *", namespace)
    assert set(DESIGN_NAMES) <= set(namespace)


@pytest.mark.parametrize("name", SLURM_NAMES)
def test_dispatch_core_knows_no_slurm_encoding(name):
    """The Slurm comment codec and hold encoding are the Slurm adapter's, not the core's."""
    assert not hasattr(dispatch_core, name)
    assert name not in dispatch_core.__all__
    import adapters.slurm.identity as slurm_identity

    assert name in slurm_identity.__all__


def test_the_neutral_hold_range_stays_in_the_core():
    """The range of a hold number is every adapter's (0 < k < HoldBound)."""
    assert dispatch_core.HoldBound == 1_000_000


def test_every_exported_name_exists():
    """__all__ names nothing that is missing."""
    module = importlib.import_module("dispatch_core")
    assert [n for n in module.__all__ if not hasattr(module, n)] == []


@pytest.mark.parametrize(
    "name", ["Unsupported", "Rejected", "NotFound", "OutcomeUnknown", "Conflict"]
)
def test_errors_are_dispatch_errors(name):
    """Every error of the contract is a DispatchError, so a host tells a refusal from a bug."""
    error = getattr(dispatch_core, name)
    assert issubclass(error, dispatch_core.DispatchError)
    assert issubclass(error, Exception)
    assert error is not dispatch_core.DispatchError


def test_the_errors_are_distinct():
    """No error of the contract is another's subclass: a host can tell them apart."""
    errors = [
        dispatch_core.Unsupported,
        dispatch_core.Rejected,
        dispatch_core.NotFound,
        dispatch_core.OutcomeUnknown,
        dispatch_core.Conflict,
    ]
    for a in errors:
        for b in errors:
            assert (a is b) == issubclass(a, b)


@pytest.mark.parametrize("name", [n for n in DESIGN_NAMES if n in spi.__all__])
def test_spi_protocols_come_from_dispatch_core_spi(name):
    """The SPI lives in dispatch_core.spi and is re-exported unchanged."""
    assert getattr(dispatch_core, name) is getattr(spi, name)


# ---------------------------------------------------------------------------------------------
# Conforming objects, one per protocol, and the same less one method
# ---------------------------------------------------------------------------------------------


class Full:
    """Implements every SPI method (it is all of the protocols at once)."""

    name = "full"

    def capabilities(self, spec):
        return {}

    def rules(self, policy):
        return []

    def start(self, plan, submission, attempt):
        return dispatch_core.ObjectRef(
            backend="full", uid="u", id="1", submit=datetime(2024, 1, 1, tzinfo=UTC)
        )

    def find(self, job_id):
        return []

    def open(self, ref):
        raise dispatch_core.NotFound(ref.id)

    def stop(self, ref):
        return None

    def hold(self, ref):
        return 1

    def release(self, ref, hold):
        return None

    def requeue(self, ref):
        return None

    def native(self, policy):
        return []

    def compile(self, policy):
        return dispatch_core.NativeOffer()

    def identity_weakened(self, spec):
        return ""

    def read_output(self, ref, offset=0):
        return b""

    def follow_output(self, ref):
        return iter(())

    def preflight(self, options=None):
        return {}


# protocol -> the methods (or attributes) it requires
PROTOCOLS = {
    "Backend": ["name", "capabilities", "rules", "start", "find", "open", "stop"],
    "Holder": ["hold", "release"],
    "Requeuer": ["requeue"],
    "NativePolicyCompiler": ["native", "compile"],
    "IdentityWeakener": ["identity_weakened"],
    "OutputReader": ["read_output", "follow_output"],
    "Preflight": ["preflight"],
}


def _without(member: str) -> object:
    """A Full whose class lacks ``member``."""
    attributes = {k: v for k, v in vars(Full).items() if k != member}
    return type(f"FullWithout_{member}", (), attributes)()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_protocol_is_runtime_checkable(protocol):
    """isinstance works against a conforming object."""
    assert isinstance(Full(), getattr(dispatch_core, protocol))


@pytest.mark.parametrize(
    ("protocol", "member"),
    [(protocol, member) for protocol, members in PROTOCOLS.items() for member in members],
)
def test_protocol_refuses_an_object_missing_a_member(protocol, member):
    """isinstance fails against an object missing any one of the protocol's members."""
    assert not isinstance(_without(member), getattr(dispatch_core, protocol))


class BareBackend:
    """A Backend and nothing more."""

    name = "bare"

    def capabilities(self, spec):
        return {}

    def rules(self, policy):
        return []

    def start(self, plan, submission, attempt):
        raise NotImplementedError

    def find(self, job_id):
        return []

    def open(self, ref):
        raise NotImplementedError

    def stop(self, ref):
        return None


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if p != "Backend"])
def test_a_bare_backend_implements_no_optional_interface(protocol):
    """The optional interfaces are detected, never assumed: a bare Backend has none."""
    assert isinstance(BareBackend(), dispatch_core.Backend)
    assert not isinstance(BareBackend(), getattr(dispatch_core, protocol))
