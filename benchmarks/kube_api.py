"""Figures for the simulated Kubernetes API over loopback (a benchmark: it prints, asserts nothing).

    .venv/bin/python benchmarks/kube_api.py [--count 1000] [--seed 0]

Requests per second with ``http.client`` on one keep-alive connection: create, get and list of
ConfigMaps (no controller touches them) and of TrainJobs (custom objects, through whatever
controllers the simulator wires in), list by label selector over ``--count`` objects, and watch
events delivered per second (one stream, a create per event).
"""

from __future__ import annotations

import argparse
import http.client
import json
import threading
import time
from collections.abc import Callable

from simulators.kubernetes import KubeSim

CM = "/api/v1/namespaces/default/configmaps"
TJ = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"


def _rate(label: str, n: int, work: Callable[[int], object]) -> None:
    start = time.perf_counter()
    for i in range(n):
        work(i)
    took = time.perf_counter() - start
    print(f"{label:<38} {n:>6} in {took:6.2f} s  {n / took:8.0f} req/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="objects per phase (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="the simulator's seed (default 0)")
    args = parser.parse_args()
    n = args.count
    sim = KubeSim(seed=args.seed)
    with sim.serve() as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)

        def call(method: str, path: str, body: object = None, ctype: str = "") -> bytes:
            headers = {"Content-Type": ctype} if ctype else {}
            data = None if body is None else json.dumps(body)
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
            if resp.status >= 300:
                raise SystemExit(f"{method} {path}: {resp.status} {raw[:200]!r}")
            return raw

        def cm(i: int) -> dict[str, object]:
            labels = {"app": "bench", "shard": str(i % 10)}
            return {"metadata": {"name": f"cm-{i}", "labels": labels}, "data": {"i": str(i)}}

        def tj(i: int) -> dict[str, object]:
            return {
                "apiVersion": "trainer.kubeflow.org/v1alpha1",
                "kind": "TrainJob",
                "metadata": {"name": f"tj-{i}", "labels": {"shard": str(i % 10)}},
                "spec": {"runtimeRef": {"name": "torch-distributed"}, "suspend": True},
            }

        _rate("create configmap", n, lambda i: call("POST", CM, cm(i)))
        _rate("get configmap", n, lambda i: call("GET", f"{CM}/cm-{i}"))
        _rate(f"list configmaps (limit=50 of {n})", 200, lambda i: call("GET", f"{CM}?limit=50"))
        _rate(
            f"list by label (shard=3, {n // 10} of {n})",
            200,
            lambda i: call("GET", f"{CM}?labelSelector=shard%3D3"),
        )
        _rate(
            "patch configmap (merge)",
            n,
            lambda i: call(
                "PATCH", f"{CM}/cm-{i}", {"data": {"p": "1"}}, "application/merge-patch+json"
            ),
        )
        _rate("create trainjob", n, lambda i: call("POST", TJ, tj(i)))
        _rate("get trainjob", n, lambda i: call("GET", f"{TJ}/tj-{i}"))
        _rate(
            f"list trainjobs by label ({n // 10} of {n})",
            200,
            lambda i: call("GET", f"{TJ}?labelSelector=shard%3D3"),
        )

        rv = json.loads(call("GET", f"{CM}?limit=1"))["metadata"]["resourceVersion"]
        watcher = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        watcher.request("GET", f"{CM}?watch=true&resourceVersion={rv}")
        stream = watcher.getresponse()
        got = [0]

        def read() -> None:
            for _ in range(n):
                stream.readline()
                got[0] += 1

        reader = threading.Thread(target=read)
        start = time.perf_counter()
        reader.start()
        for i in range(n):
            call("POST", CM, cm(n + i))
        reader.join()
        took = time.perf_counter() - start
        label = "watch events (create + delivery)"
        print(f"{label:<38} {got[0]:>6} in {took:6.2f} s  {got[0] / took:8.0f} ev/s")
        sim.faults.cut_watches()


if __name__ == "__main__":
    main()
