"""squeue's fast printing against the reference: the same bytes, stderr and exit status.

The oracle is squeue as it was before it was made fast (commit 8fb1f33): a job's view that
recomputes everything on each access (:class:`RefView`), the filter building a view per job,
the sorts as they were, and every line printed item by item through ``Item.render`` and
``print_str`` (kept in the module as the reference, and used for the header). Hypothesis
drives a cluster into jobs pending, held, running, requeued, completing and ended, then runs
``squeue`` with generated ``-o``/``-O`` formats (widths positive, zero, negative, right-
justified, suffixes, invalid specs, ``%all``), filters and sorts, on both paths."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from hypothesis import given, settings
from hypothesis import strategies as st

from simulators.slurm import JobState, SlurmConfig, SlurmError, SlurmSim
from simulators.slurm.commands import squeue as sq
from simulators.slurm.commands.common import CommandExit, ctime, run_to_bytes
from simulators.slurm.commands.getopt import UsageError, parse, refuse
from simulators.slurm.controller import INVALID_JOB_ID, UNAVAILABLE, Job
from simulators.slurm.sim import Output
from simulators.slurm.timefmt import format_time

INFINITE: Final = 0xFFFFFFFF
YEAR_SECONDS: Final = 365 * 24 * 3600


# -- the reference: squeue before it was made fast -------------------------------------------------


@dataclass(frozen=True)
class RefView:
    """The job view as it was: every property computed on each access."""

    job: Job
    now: int
    cluster: str
    submit_host: str

    @property
    def base(self) -> str:
        state = self.job.state
        if state in (JobState.SPECIAL_EXIT, JobState.REQUEUED):
            return "PENDING"
        if state is JobState.COMPLETING:
            return "PENDING" if self.job.requeue_target is not None else "COMPLETED"
        return str(state)

    @property
    def flags(self) -> frozenset[str]:
        state = self.job.state
        if state is JobState.COMPLETING:
            return frozenset({"COMPLETING"})
        if state is JobState.SPECIAL_EXIT:
            return frozenset({"SPECIAL_EXIT"})
        if state is JobState.REQUEUED:
            return frozenset({"REQUEUED"})
        return frozenset()

    @property
    def state_name(self) -> str:
        return str(self.job.state)

    @property
    def compact(self) -> str:
        return self.job.state.compact

    @property
    def pending(self) -> bool:
        return self.base == "PENDING"

    @property
    def time_limit(self) -> int:
        limit = self.job.time_limit
        return INFINITE if limit is None else limit

    @property
    def start_time(self) -> int:
        job = self.job
        if not self.pending:
            return job.start_time
        if job.start_time:
            return max(job.start_time, self.now)
        if job.begin_time > self.now:
            return job.begin_time
        return 0

    @property
    def end_time(self) -> int:
        job = self.job
        limit = self.time_limit
        if not self.pending:
            if job.state.finished:
                return job.end_time
            if limit == INFINITE:
                return job.start_time + YEAR_SECONDS
            return job.start_time + limit * 60
        start = self.start_time
        if start:
            return max(job.end_time, start + ((limit * 60) & 0xFFFFFFFF))
        return 0

    @property
    def time_used(self) -> int:
        job = self.job
        if job.start_time == 0 or self.pending:
            return 0
        if job.state is JobState.RUNNING or job.end_time == 0:
            return self.now - job.start_time
        return job.end_time - job.start_time

    @property
    def nodes(self) -> int:
        return self.job.submission.nodes

    @property
    def tasks(self) -> int:
        sub = self.job.submission
        return sub.ntasks or sub.nodes * (sub.ntasks_per_node or 1)

    @property
    def tres(self) -> str:
        job = self.job
        return f"cpu={job.cpus},node={self.nodes},billing={job.cpus}"

    @property
    def batch_host(self) -> str | None:
        return self.job.nodelist.split(",")[0] if self.job.nodelist else None

    @property
    def command(self) -> str | None:
        name = self.job.submission.environment.get("__SCRIPT_NAME__")
        if name is None or name == "wrap":
            return None
        return f"{self.job.submission.work_dir}/{name}"

    @property
    def stdout(self) -> str:
        sub = self.job.submission
        return sub.stdout or f"{sub.work_dir}/slurm-{self.job.job_id}.out"

    @property
    def accrue_time(self) -> int:
        job = self.job
        if job.held and self.pending:
            return 0
        return job.begin_time if 0 < job.begin_time <= self.now else 0


def _ref_load(sim: SlurmSim, params: sq._Params, result: Output) -> list[Job]:
    controller = sim.controller
    if params.jobs is not None and len(params.jobs) == 1:
        job = controller.jobs.get(params.jobs[0][0])
        if job is None:
            result.err(f"slurm_load_jobs error: {INVALID_JOB_ID}")
            raise CommandExit(1)
        candidates: Iterable[Job] = [job]
    elif params.names is not None:
        found: dict[int, Job] = {}
        for name in params.names:
            for job in controller.named(name):
                found[id(job)] = job
        candidates = found.values()
    elif params.jobs is not None:
        candidates = [controller.jobs[i] for i, _ in params.jobs if i in controller.jobs]
    else:
        candidates = controller.jobs.values()
    return sorted(candidates, key=lambda j: j.seq)


def _ref_state_selected(view: RefView, states: list[tuple[str, bool]] | None) -> bool:
    if states is None:
        return view.pending or view.base in ("RUNNING", "SUSPENDED") or "COMPLETING" in view.flags
    return any(
        (name in view.flags) if flag else (name == view.base and not view.flags)
        for name, flag in states
    )


def _ref_keep(job: Job, params: sq._Params, now: int) -> bool:
    if params.jobs is not None and not any(
        job_id == job.job_id and array_id is None for job_id, array_id in params.jobs
    ):
        return False
    if params.licenses is not None:
        return False
    if params.accounts is not None and not any(
        a.lower() == job.account.lower() for a in params.accounts
    ):
        return False
    if params.qos is not None and not any(q.lower() == "normal" for q in params.qos):
        return False
    if not params.all_states and not _ref_state_selected(RefView(job, now, "", ""), params.states):
        return False
    if params.nodes is not None and not (set(job.nodelist.split(",")) & params.nodes):
        return False
    if params.users is not None and job.uid not in params.users:
        return False
    if params.reservation is not None:
        return False
    if params.names is not None and not any(n.lower() == job.name.lower() for n in params.names):
        return False
    return params.partitions is None or job.partition in params.partitions


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _ref_start(view: RefView) -> int:
    if view.base == "PENDING" and not view.flags and view.start_time < view.now:
        return view.now
    return view.start_time


def _ref_sorted_by_start(views: list[RefView], reverse: bool) -> list[RefView]:
    starting = [view for view in views if view.start_time != 0]
    unknown = [view for view in views if view.start_time == 0]
    return sorted(starting, key=_ref_start, reverse=reverse) + unknown[::-1]


_REF_SORT_KEYS: Final[dict[str, Callable[[RefView], int | str | bytes]]] = {
    "B": lambda v: _b(v.batch_host or ""),
    "C": lambda v: v.job.cpus,
    "D": lambda v: v.nodes,
    "e": lambda v: v.end_time,
    "g": lambda v: _b(v.job.user),
    "G": lambda v: v.job.uid,
    "i": lambda v: v.job.job_id,
    "j": lambda v: _b(v.job.name),
    "l": lambda v: v.time_limit,
    "L": lambda v: (v.time_limit * 60 - v.time_used) if v.time_limit != INFINITE else INFINITE,
    "M": lambda v: v.time_used,
    "N": lambda v: _b(v.job.nodelist),
    "p": lambda v: v.job.priority,
    "P": lambda v: _b(v.job.partition),
    "Q": lambda v: v.job.priority,
    "t": lambda v: _b(v.compact),
    "T": lambda v: _b(v.state_name),
    "u": lambda v: _b(v.job.user),
    "U": lambda v: v.job.uid,
    "V": lambda v: v.job.submit_time,
}


def _ref_sort(views: list[RefView], spec: str) -> tuple[list[RefView], str | None]:
    views = _ref_sorted_by_start(views, True)
    i = len(spec) - 1
    while i >= 0:
        letter = spec[i]
        if letter in ",+-":
            i -= 1
            continue
        reverse = i > 0 and spec[i - 1] == "-"
        if i + 1 >= 7 and spec[i - 6 : i + 1].lower() == "cluster":
            i -= 7
            continue
        if letter == "S":
            views = _ref_sorted_by_start(views, reverse)
        elif letter in _REF_SORT_KEYS:
            views = sorted(views, key=_REF_SORT_KEYS[letter], reverse=reverse)
        elif letter not in "bcdfhHIJmnOvz":
            return views, f"squeue: error: Invalid sort specification: {letter}"
        i -= 1
    return views, None


def _ref_run(
    sim: SlurmSim, args: list[str], env: Mapping[str, str], result: Output, out: bytearray
) -> None:
    """squeue's ``_run`` as it was (without ``--json``), printing through ``render_line``."""
    cli = parse("squeue", args, sq.SPEC, defer=True)
    try:
        params = sq._params(sim, cli, env, result)
    except UsageError as error:
        raise CommandExit(refuse(result, error)) from None
    assert not cli.has("json")
    if (params.iterate or params.long_list) and not params.no_header:
        out += _b(ctime(sim.controller.now) + "\n")
    controller = sim.controller
    if not controller.available():
        result.err(f"slurm_load_jobs error: {UNAVAILABLE}")
        raise CommandExit(1)
    jobs = _ref_load(sim, params, result)
    if params.format is not None:
        items, errors = sq.parse_format(params.format)
    else:
        fmt = params.format_long
        if fmt is None:
            fmt = sq.LONG_FORMAT if params.long_list else sq.DEFAULT_FORMAT
        items, errors = sq._parse_long_format(fmt)
    for line in errors:
        result.err(line)
    if not params.no_header:
        out += sq.render_line(items, None, env)
    now = controller.now
    config = sim.config
    views = [
        RefView(job, now, config.cluster_name, config.submit_host)
        for job in jobs
        if _ref_keep(job, params, now)
    ]
    views, sort_error = _ref_sort(views, params.sort or sq.DEFAULT_SORT)
    if sort_error is not None:
        result.err(sort_error)
        raise CommandExit(1)
    for view in views:
        out += sq.render_line(items, view, env)  # type: ignore[arg-type]  # duck-typed view
    if params.iterate:
        out += b"\n"


# -- what Hypothesis generates ---------------------------------------------------------------------

TEXT: Final = st.sampled_from(
    [
        "",
        "|",
        " ",
        "x",
        "é",
        "名",
        "\udcff",
        ",",
        "::",
        "%",
        "{",
        "}}",
        "{t0}",
        "\\",
        "'",
        '"',
        "\n",
    ]
)
NAMES: Final = st.sampled_from(
    ["dj-A", "dj-a", "dj-ÄÖÜ-long-name-over-twenty", "dj-名前", "dj-X,dj-Y", "x" * 40]
)
COMMENTS: Final = st.sampled_from(["", "dispatch:s=1;a=0", "é" * 15, "c" * 30, "a b"])
WIDTHS: Final = st.sampled_from(
    ["", "0", "1", "2", "5", "6", "7", "12", "20", "31", "007", "99999", "4294967297"]
)
LETTERS: Final = st.sampled_from([*sorted(sq.LETTERS), "!", "|", "1", "é", ""])


@st.composite
def short_formats(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["%all", "%ALL", "no percent", "%"]))
    tokens = [draw(TEXT)]
    for _ in range(draw(st.integers(0, 8))):
        dot = draw(st.sampled_from(["", ".", ".", ".."]))
        tokens.append(f"%{dot}{draw(WIDTHS)}{draw(LETTERS)}{draw(TEXT)}")
    return "".join(tokens)


LONG_TYPES: Final = st.sampled_from(
    [
        *sorted(sq.LONG_NAMES),
        "JobID",
        "NAME",
        "numtasks",
        "NumTasksX",
        "bogus",
        "",
        "Reason",
        "State",
        "SubmitTime",
    ]
)
SIZES: Final = st.sampled_from(["", "0", "1", "5", "6", "8", "20", "-1", "-7", "+3", "99999", "x"])


@st.composite
def long_formats(draw: st.DrawFn) -> str:
    specs = []
    for _ in range(draw(st.integers(1, 8))):
        name = draw(LONG_TYPES)
        if draw(st.booleans()):
            specs.append(name)
        else:
            dot = draw(st.sampled_from(["", "."]))
            specs.append(f"{name}:{dot}{draw(SIZES)}{draw(TEXT)}")
    return ",".join(specs)


EXTRA: Final = st.lists(
    st.sampled_from(
        [
            ["-t", "all"],
            ["-t", "PD,R"],
            ["-t", "CG"],
            ["-t", "RQ,SE"],
            ["-t", "CD,CA,F,TO,NF"],
            ["--sort", "i"],
            ["--sort", "-V,j"],
            ["--sort", "j"],
            ["-S", "-j,u"],
            ["-S", "i,x,j"],
            ["-S", "-cluster,-i"],
            ["-S", "+Z"],
            ["--sort", "S"],
            ["-S", "-S,t,e,L,M,B,N"],
            ["-S", "T,-P,C,D,g,G,l,p,Q,u,U,cluster"],
            ["-n", "dj-a,dj-名前"],
            ["-j", "1,2,3"],
            ["-j", "2"],
            ["-p", "debug"],
            ["-A", "LAB"],
            ["-w", "n1"],
            ["-u", "root"],
            ["--me"],
            ["-q", "normal"],
            ["-l"],
            ["--start"],
            ["-i", "5"],
        ]
    ),
    max_size=3,
)
TIME_FORMATS: Final = st.sampled_from(
    [None, "standard", "", "relative", "%s", "%a %d %b", "%Y-%m-%dT%H:%M:%S éééééééééé", "%H:%M"]
)


@st.composite
def squeue_argvs(draw: st.DrawFn) -> tuple[list[str], dict[str, str]]:
    argv = ["squeue"]
    if draw(st.booleans()):
        argv.append("-h")
    kind = draw(st.sampled_from(["o", "O", "default"]))
    if kind == "o":
        argv += ["-o", draw(short_formats())]
    elif kind == "O":
        argv += ["-O", draw(long_formats())]
    for extra in draw(EXTRA):
        argv += extra
    env: dict[str, str] = {}
    if (time_format := draw(TIME_FORMATS)) is not None:
        env["SLURM_TIME_FORMAT"] = time_format
    if kind == "default" and draw(st.booleans()):  # squeue's own variables
        if draw(st.booleans()):
            env["SQUEUE_FORMAT"] = draw(short_formats())
        else:
            env["SQUEUE_FORMAT2"] = draw(long_formats())
        env["SQUEUE_SORT"] = draw(st.sampled_from(["i", "-t,j", "V,x"]))
    return argv, env


# Names sbatch refuses but a job can be given (a name off the command line, decoded with
# surrogateescape): their bytes sort otherwise than their characters.
RENAME_TO: Final = ("dj-\udcff", "dj-\udc80x", "dj-é", "dj-名", "dj-~", "DJ-A")
RENAMES: Final = st.sampled_from(RENAME_TO)
ENDS: Final = st.sampled_from(
    ["FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "DEADLINE", "PREEMPTED", "BOOT_FAIL"]
)
SBATCH: Final = st.tuples(
    st.just("sbatch"),
    NAMES,
    COMMENTS,
    st.booleans(),
    st.sampled_from(["1", "2"]),
    st.sampled_from([None, "1", "0:30", "UNLIMITED"]),
    st.sampled_from([None, "now+40", "now+3000"]),
)
OPS: Final = st.tuples(
    st.lists(SBATCH, min_size=1, max_size=6),
    st.lists(
        st.one_of(
            SBATCH,
            st.tuples(st.just("advance"), st.sampled_from([1, 2, 3, 30, 61, 130])),
            st.tuples(
                st.sampled_from(["requeue", "requeuehold", "specialexit", "hold", "release"]),
                st.integers(0, 20),
            ),
            st.tuples(st.sampled_from(["finish", "cancel"]), st.integers(0, 20)),
            st.tuples(st.just("fail"), st.integers(0, 20), ENDS),
            st.tuples(st.just("node_failure"), st.sampled_from(["n1", "n2"])),
            st.tuples(st.just("rename"), st.integers(0, 20), RENAMES),
        ),
        max_size=14,
    ),
).map(lambda parts: [*parts[0], ("advance", 2), *parts[1]])


def drive(
    ops: list[tuple[object, ...]], after: Callable[[SlurmSim], None] | None = None
) -> SlurmSim:
    """A cluster after ``ops`` (submissions, time, requeues, holds, ends, node failures),
    ``after`` called after each."""
    config = SlurmConfig(max_job_id=40, min_job_age=5, nodes=("n1", "n2"), cpus_per_node=2)
    sim = SlurmSim(config, seed=3)
    sim.advance(1_000_000)
    for op in ops:
        ids = sorted(sim.controller.jobs)
        kind = op[0]
        if kind == "sbatch":
            _, name, comment, hold, nodes, limit, begin = op
            argv = ["sbatch", "--parsable", f"--job-name={name}", f"--comment={comment}"]
            argv += [f"--nodes={nodes}"] + (["--hold"] if hold else [])
            argv += [f"--time={limit}"] if limit else []
            argv += [f"--begin={begin}"] if begin else []
            sim.run(argv, stdin="#!/bin/sh\ntrue\n")
        elif kind == "advance":
            sim.advance(int(str(op[1])))
        elif kind == "rename" and ids:
            job = sim.controller.jobs[ids[int(str(op[1])) % len(ids)]]
            with contextlib.suppress(SlurmError):
                sim.controller.set_name(job, str(op[2]))
        elif kind == "node_failure":
            sim.controller.node_failure(str(op[1]))
        elif ids:
            jobs = [sim.controller.jobs[i] for i in ids]
            if kind not in ("hold", "release"):  # those of a running job, when there is one
                jobs = [job for job in jobs if job.state is JobState.RUNNING] or jobs
            job = jobs[int(str(op[1])) % len(jobs)]
            if kind in ("requeue", "requeuehold", "hold", "release"):
                sim.run(["scontrol", str(kind), str(job.job_id)])
            elif kind == "specialexit":
                sim.run(["scontrol", "requeuehold", "State=SpecialExit", str(job.job_id)])
            elif kind == "finish" and job.state is JobState.RUNNING:
                sim.finish(job.job_id)
            elif kind == "fail" and job.state is JobState.RUNNING:
                sim.fail(job.job_id, JobState(str(op[2])))
            elif kind == "cancel":
                with contextlib.suppress(SlurmError):
                    sim.controller.cancel(job, by=0)
        if after is not None:
            after(sim)
    return sim


def check_same(sim: SlurmSim, argv: list[str], env: dict[str, str]) -> None:
    done = sim.run(argv, env=env)
    expected = run_to_bytes(_ref_run, sim, argv[1:], dict(env))
    assert (done.stdout, done.stderr, done.returncode) == (
        expected.stdout,
        expected.stderr,
        expected.returncode,
    ), argv


# -- the properties --------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(OPS, st.lists(squeue_argvs(), min_size=1, max_size=4))
def test_squeue_prints_what_the_reference_prints(
    ops: list[tuple[object, ...]], calls: list[tuple[list[str], dict[str, str]]]
) -> None:
    sim = drive(ops)
    for argv, env in calls:
        check_same(sim, argv, env)


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_the_view_is_the_reference_view(ops: list[tuple[object, ...]]) -> None:
    sim = drive(ops)
    now = sim.controller.now
    names = [
        "base",
        "flags",
        "state_name",
        "compact",
        "pending",
        "time_limit",
        "start_time",
        "end_time",
        "time_used",
        "nodes",
        "tasks",
        "tres",
        "batch_host",
        "command",
        "stdout",
        "accrue_time",
    ]
    for job in sim.controller.jobs.values():
        fast, ref = sq.JobView(job, now, "c", "h"), RefView(job, now, "c", "h")
        assert {n: getattr(fast, n) for n in names} == {n: getattr(ref, n) for n in names}
        assert sq.job_json(fast) == sq.job_json(ref)  # type: ignore[arg-type]
        assert sq._start(fast) == _ref_start(ref)
        for env in ({}, {"SLURM_TIME_FORMAT": "%s"}):
            for key, field in sq.FIELDS.items():  # an inlined value is the field's value
                if field.expr is not None:
                    scope = {"job": job, "view": fast, "time_of": sq._time_of(env)}
                    inlined = eval(field.expr, scope)
                    assert inlined == field.value(ref, env), key  # type: ignore[arg-type]
                    assert isinstance(inlined, str) or field.expr_null, key


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(
        [0, 1, 999_999, 1_700_000_000, 4_102_444_800, 0xFFFFFFFE, 253_402_300_799, 2**40]
    ),
    st.sampled_from([0, 0, 1, -1, 86_399, -100_000]) | st.integers(-100_000, 100_000),
    TIME_FORMATS,
)
def test_the_time_is_formatted_as_it_was(base: int, delta: int, time_format: str | None) -> None:
    epoch = max(0, base + delta)
    env = {} if time_format is None else {"SLURM_TIME_FORMAT": time_format}
    expected = (
        "N/A" if epoch == 0 else _b(format_time(epoch, env))[:31].decode("utf-8", "surrogateescape")
    )
    assert sq._time(epoch, env) == expected


def test_the_generated_clusters_reach_every_state() -> None:
    """The generator's operations reach jobs pending, held, running, completing, requeued
    (pending again, and held), with a special exit, and ended; each listing is the reference's."""
    seen: set[tuple[str, str]] = set()

    def look(sim: SlurmSim) -> None:
        for job in sim.controller.jobs.values():
            seen.add((str(job.state), "held" if job.held else ""))
            if job.restart_count:
                seen.add((str(job.state), "requeued"))
            if job.requeue_target is not None:
                seen.add((str(job.state), "requeueing"))
        for argv in (["squeue", "-t", "all", "-o", "%all"], ["squeue", "-l", "-t", "all"]):
            check_same(sim, argv, {})

    ops: list[tuple[object, ...]] = []
    for i in range(12):
        ops.append(("sbatch", "dj-a", "", i % 3 == 0, "1", "1" if i % 4 == 1 else None, None))
    ops += [("advance", 3), ("requeue", 0), ("requeuehold", 0), ("advance", 2), ("finish", 0)]
    ops += [
        ("advance", 1),
        ("fail", 1, "NODE_FAIL"),
        ("advance", 1),
        ("cancel", 0),
        ("specialexit", 0),
    ]
    ops += [("advance", 2), ("node_failure", "n1"), ("advance", 130), ("release", 2)]
    ops += [("advance", 30), ("fail", 0, "FAILED"), ("fail", 0, "OUT_OF_MEMORY"), ("advance", 1)]
    drive(ops, look)
    states = {state for state, _ in seen}
    assert {"PENDING", "RUNNING", "COMPLETING", "COMPLETED", "CANCELLED"} <= states, seen
    assert {"FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "SPECIAL_EXIT"} <= states, seen
    assert {("PENDING", "held"), ("PENDING", "requeued"), ("COMPLETING", "requeueing")} <= seen


def test_names_sort_by_their_bytes() -> None:
    """``-S j`` compares bytes: a name decoded with surrogateescape sorts by its raw byte
    (0x80 before the lead byte of é), not by its character (U+DC80 after é)."""
    ops: list[tuple[object, ...]] = [("sbatch", "dj-a", "", False, "1", None, None)] * 6
    ops += [("rename", i, name) for i, name in enumerate(RENAME_TO)]
    sim = drive(ops)
    assert sorted(job.name for job in sim.controller.jobs.values()) != sorted(
        (job.name for job in sim.controller.jobs.values()), key=_b
    )
    for spec in ("j", "-j", "j,-i", "u,j"):
        check_same(sim, ["squeue", "-S", spec, "-o", "%i %j"], {})
