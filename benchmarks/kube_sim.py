"""Figures for the Kubernetes simulator itself (a benchmark: it prints, asserts nothing).

    .venv/bin/python benchmarks/kube_sim.py [--trainjobs 10000] [--seed 0]

- one TrainJob from create to pods running and to ``Complete``, in wall time, with and without
  Kueue (virtual time: the kubelet's start and the containers' run);
- ``--trainjobs`` TrainJobs in one simulator (created suspended, so that the cluster holds them
  all): the create rate, then a list by label selector that matches ten of them, and a full list,
  each timed: the selective list reads the label index, not every object.
"""

from __future__ import annotations

import argparse
import time

from dispatch_core.clock import DEFAULT_START
from simulators.kubernetes import KubeConfig, KubeSim
from simulators.kubernetes.objects import JSON
from simulators.kubernetes.resources import PODS, TRAINJOBS
from simulators.kubernetes.selectors import LabelSelector


def trainjob(name: str, labels: dict[str, str], suspend: bool = False) -> JSON:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "suspend": suspend,
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "image": "busybox", "command": ["train"]},
        },
    }


def one_lifecycle(kueue: bool, seed: int) -> None:
    start = time.perf_counter()
    sim = KubeSim(KubeConfig(kueue=kueue), seed=seed)
    made = time.perf_counter()
    labels = {"kueue.x-k8s.io/queue-name": "user-queue"} if kueue else {}
    sim.create(TRAINJOBS, trainjob("tj", labels), "default")
    running_at = None
    while running_at is None:
        sim.advance(1)
        with sim.lock:
            phases = [p["status"].get("phase") for p in sim.store.select(PODS, "default")]
        if phases and all(p == "Running" for p in phases):
            running_at = time.perf_counter()
    virtual_running = sim.clock.now()
    while "Complete" not in [
        c["type"]
        for c in sim.get(TRAINJOBS, "tj", "default").get("status", {}).get("conditions", [])
    ]:
        sim.advance(5)
    done = time.perf_counter()
    kind = "with" if kueue else "without"
    print(
        f"lifecycle {kind} Kueue: simulator made in {(made - start) * 1000:.1f} ms; "
        f"create to pods running {(running_at - made) * 1000:.1f} ms wall "
        f"({virtual_running - DEFAULT_START:.0f} s virtual); to Complete "
        f"{(done - made) * 1000:.1f} ms wall ({sim.clock.now() - DEFAULT_START:.0f} s virtual)"
    )


def many(count: int, seed: int) -> None:
    sim = KubeSim(seed=seed)
    start = time.perf_counter()
    for i in range(count):
        sim.create(
            TRAINJOBS,
            trainjob(f"tj-{i:05d}", {"team": f"t{i % (count // 10 or 1)}", "all": "yes"}, True),
            "default",
        )
    took = time.perf_counter() - start
    print(f"{count} TrainJobs created (suspended) in {took:.2f} s: {count / took:.0f}/s")
    selector = LabelSelector.parse("team=t7")
    everything = LabelSelector.parse("all=yes")
    with sim.lock:
        t0 = time.perf_counter()
        for _ in range(100):
            page = sim.store.list(TRAINJOBS, "default", labels=selector)
        selective = (time.perf_counter() - t0) / 100
        t0 = time.perf_counter()
        full = sim.store.list(TRAINJOBS, "default", labels=everything)
        whole = time.perf_counter() - t0
    print(
        f"list team=t7: {len(page.items)} of {count} in {selective * 1e6:.0f} us; "
        f"list all=yes: {len(full.items)} in {whole * 1000:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trainjobs", type=int, default=10_000, help="TrainJobs in one simulator")
    parser.add_argument("--seed", type=int, default=0, help="the simulator's seed (default 0)")
    args = parser.parse_args()
    one_lifecycle(False, args.seed)
    one_lifecycle(True, args.seed)
    many(args.trainjobs, args.seed)


if __name__ == "__main__":
    main()
