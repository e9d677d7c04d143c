"""The simulated API server over raw HTTP: codes, Status bodies, discovery, lists, watches, faults.

ConfigMaps carry the watch and determinism tests: no controller touches them, so the event
sequences are the requests' own.
"""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulators.kubernetes import KubeConfig, KubeSim, cli
from simulators.kubernetes.http.tables import human_duration, table
from simulators.kubernetes.objects import parse_timestamp
from simulators.kubernetes.resources import TRAINJOBS
from simulators.kubernetes.server import Server

CM = "/api/v1/namespaces/default/configmaps"
TJ = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"
PODS = "/api/v1/namespaces/default/pods"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


class Client:
    """http.client over one keep-alive connection; answers (status, reason, headers, body)."""

    def __init__(self, server: Server) -> None:
        self.port = server.port
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)

    def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, str, http.client.HTTPMessage, bytes]:
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        self.conn.request(method, path, body=data, headers=headers or {})
        resp = self.conn.getresponse()
        return resp.status, resp.reason, resp.headers, resp.read()

    def json(self, method: str, path: str, body: Any = None, **headers: str) -> tuple[int, Any]:
        code, _, _, raw = self.call(
            method, path, body, {k.replace("_", "-"): v for k, v in headers.items()}
        )
        return code, json.loads(raw)

    def watch(self, path: str) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("GET", path)
        resp = conn.getresponse()
        assert resp.status == 200
        return resp


def events(resp: http.client.HTTPResponse, n: int) -> list[dict[str, Any]]:
    return [json.loads(resp.readline()) for _ in range(n)]


def cm(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"k": name},
    }


def trainjob(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    }


@pytest.fixture
def sim() -> KubeSim:
    return KubeSim(seed=3)


@pytest.fixture
def server(sim: KubeSim) -> Iterator[Server]:
    with sim.serve() as s:
        yield s


@pytest.fixture
def client(server: Server) -> Client:
    return Client(server)


def test_errors_are_status_bodies_with_http_reason_phrases(client: Client) -> None:
    code, reason, headers, raw = client.call("GET", f"{CM}/nosuch")
    assert (code, reason, headers["Content-Type"]) == (404, "Not Found", "application/json")
    status = json.loads(raw)
    assert status["kind"] == "Status" and status["apiVersion"] == "v1"
    assert status["reason"] == "NotFound" and status["message"] == 'configmaps "nosuch" not found'
    assert client.json("POST", CM, cm("a"))[0] == 201
    code, status = client.json("POST", CM, cm("a"))
    assert (code, status["reason"]) == (409, "AlreadyExists")
    code, status = client.json("GET", "/apis/nosuch.io/v1/things")
    assert (code, status["message"]) == (404, "the server could not find the requested resource")


def test_stale_update_and_wrong_uid_are_409_conflict(client: Client) -> None:
    _, made = client.json("POST", CM, cm("a"))
    fresh = dict(made, data={"k": "2"})
    assert client.json("PUT", f"{CM}/a", fresh)[0] == 200
    code, status = client.json("PUT", f"{CM}/a", dict(made, data={"k": "3"}))
    assert (code, status["reason"]) == (409, "Conflict")
    assert "the object has been modified" in status["message"]
    code, status = client.json("DELETE", f"{CM}/a", {"preconditions": {"uid": "wrong"}})
    assert (code, status["reason"]) == (409, "Conflict")
    assert "Precondition failed: UID in precondition: wrong" in status["message"]
    code, gone = client.json(
        "DELETE", f"{CM}/a", {"preconditions": {"uid": made["metadata"]["uid"]}}
    )
    assert code == 200 and gone["status"] == "Success" and gone["details"]["name"] == "a"
    assert client.json("GET", f"{CM}/a")[0] == 404


def test_strategic_merge_on_a_crd_is_415_and_merge_patch_applies(client: Client) -> None:
    assert client.json("POST", TJ, trainjob("tj1"))[0] == 201
    code, reason, _, raw = client.call(
        "PATCH",
        f"{TJ}/tj1",
        '{"spec":{"suspend":true}}',
        {"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert (code, reason) == (415, "Unsupported Media Type")
    assert json.loads(raw)["message"].startswith("the body of the request was in an unknown format")
    code, patched = client.json(
        "PATCH",
        f"{TJ}/tj1",
        {"spec": {"suspend": True}},
        Content_Type="application/merge-patch+json",
    )
    assert code == 200 and patched["spec"]["suspend"] is True


def test_failed_json_patch_test_op_writes_empty_details(client: Client) -> None:
    # apiserver v0.32 handlers/patch.go applyJSPatch: an Apply error is
    # NewGenericServerResponse(422, "", GroupResource{}, "", err.Error(), 0, false), whose
    # Details is a non-nil StatusDetails with every (omitempty) field empty: "details":{}.
    assert client.json("POST", TJ, trainjob("tj1"))[0] == 201
    ops = [{"op": "test", "path": "/spec/suspend", "value": True}]
    code, reason, _, raw = client.call(
        "PATCH", f"{TJ}/tj1", json.dumps(ops), {"Content-Type": "application/json-patch+json"}
    )
    assert (code, reason) == (422, "Unprocessable Entity")
    assert raw == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"the server rejected our request due to an error in our request",'
        b'"reason":"Invalid","details":{},"code":422}\n'
    )


def test_invalid_name_is_422_with_causes(client: Client) -> None:
    code, reason, _, raw = client.call("POST", CM, cm("Bad_Name"))
    status = json.loads(raw)
    assert (code, reason, status["reason"]) == (422, "Unprocessable Entity", "Invalid")
    assert status["details"]["causes"][0]["field"] == "metadata.name"


def test_invalid_with_several_causes_aggregates_them_in_brackets(client: Client) -> None:
    # apimachinery errors.NewInvalid (v0.32): the message is the ErrorList's ToAggregate, which
    # utilerrors.aggregate.Error() brackets when it holds more than one unique message.
    name = "A" * 254
    code, status = client.json("POST", CM, cm(name))
    long = f'metadata.name: Invalid value: "{name}": must be no more than 253 characters'
    regex = (
        f'metadata.name: Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist '
        "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )
    assert code == 422
    assert status["message"] == f'ConfigMap "{name}" is invalid: [{long}, {regex}]'
    assert len(status["details"]["causes"]) == 2


def test_discovery_aggregated_legacy_version_openapi(client: Client, sim: KubeSim) -> None:
    code, _, headers, raw = client.call(
        "GET", "/apis", headers={"Accept": AGGREGATED + ",application/json"}
    )
    assert code == 200 and headers["Content-Type"] == AGGREGATED
    groups = {g["metadata"]["name"]: g for g in json.loads(raw)["items"]}
    trainer = groups["trainer.kubeflow.org"]["versions"][0]["resources"]
    tj = next(r for r in trainer if r["resource"] == "trainjobs")
    assert tj["scope"] == "Namespaced" and not tj.get("shortNames")  # none upstream
    assert tj["responseKind"]["kind"] == "TrainJob"
    assert "kueue.x-k8s.io" not in groups  # Kueue is off in this sim
    code, _, headers, raw = client.call("GET", "/api")
    assert headers["Content-Type"] == "application/json" and json.loads(raw)["versions"] == ["v1"]
    _, resources = client.json("GET", "/api/v1")
    names = {r["name"] for r in resources["resources"]}
    assert {"pods", "pods/log", "pods/status", "configmaps"} <= names
    _, version = client.json("GET", "/version")
    assert version["minor"] == str(sim.config.kube_minor)
    assert version["gitVersion"] == f"v1.{sim.config.kube_minor}.0"
    _, root = client.json("GET", "/openapi/v3")
    url = root["paths"]["apis/trainer.kubeflow.org/v1alpha1"]["serverRelativeURL"]
    _, doc = client.json("GET", url + "&timeout=32s")
    op = doc["paths"][
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}"
    ]["patch"]
    assert op["x-kubernetes-group-version-kind"]["kind"] == "TrainJob"
    assert {"name": "fieldValidation", "in": "query"} in op["parameters"]
    assert client.call("GET", "/openapi/v2")[0] == 404
    assert client.call("GET", "/healthz")[3] == b"ok"


def test_list_pages_with_continue_and_selectors(client: Client) -> None:
    for i in range(5):
        client.json("POST", CM, cm(f"c{i}", app="x" if i % 2 else "y"))
    _, page = client.json("GET", f"{CM}?limit=2")
    assert [o["metadata"]["name"] for o in page["items"]] == ["c0", "c1"]
    assert page["metadata"]["remainingItemCount"] == 3
    seen = [o["metadata"]["name"] for o in page["items"]]
    while page["metadata"].get("continue"):
        _, page = client.json("GET", f"{CM}?limit=2&continue={page['metadata']['continue']}")
        seen += [o["metadata"]["name"] for o in page["items"]]
    assert seen == [f"c{i}" for i in range(5)]
    _, page = client.json("GET", f"{CM}?labelSelector=app%20in%20%28x%29")
    assert [o["metadata"]["name"] for o in page["items"]] == ["c1", "c3"]
    _, page = client.json("GET", f"{CM}?fieldSelector=metadata.name%3Dc4")
    assert [o["metadata"]["name"] for o in page["items"]] == ["c4"]
    code, status = client.json("GET", f"{CM}?labelSelector=app%20in%20%28")
    assert (code, status["reason"]) == (400, "BadRequest")
    code, status = client.json("GET", f"{CM}?fieldSelector=spec.nope%3D1")
    assert code == 400 and status["message"] == "field label not supported: spec.nope"
    code, gone = client.json("DELETE", f"{CM}?labelSelector=app%3Dy")
    assert code == 200 and [o["metadata"]["name"] for o in gone["items"]] == ["c0", "c2", "c4"]
    _, page = client.json("GET", "/api/v1/configmaps")
    assert [o["metadata"]["name"] for o in page["items"]] == ["c1", "c3"]


def test_table_answers_for_kubectl(client: Client, sim: KubeSim) -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    client.json("POST", PODS, pod)
    sim.advance(183)
    code, _, headers, raw = client.call("GET", f"{PODS}/p", headers={"Accept": TABLE})
    table = json.loads(raw)
    assert code == 200 and table["kind"] == "Table"
    assert headers["Content-Type"] == "application/json;as=Table;v=v1;g=meta.k8s.io"
    names = [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0]
    assert names == ["Name", "Ready", "Status", "Restarts", "Age"]
    row = table["rows"][0]
    assert row["cells"][0] == "p" and row["cells"][1].endswith("/1") and row["cells"][4] == "3m3s"
    assert row["object"]["metadata"]["namespace"] == "default"


def test_human_duration_matches_kubectls_printer() -> None:
    cases = {5: "5s", 119: "119s", 182: "3m2s", 600: "10m", 4 * 3600: "4h", 7 * 3600 + 300: "7h5m"}
    cases |= {
        2 * 86400: "2d",
        3 * 86400 + 4 * 3600: "3d4h",
        400 * 86400: "400d",
        740 * 86400: "2y10d",
    }
    for seconds, text in cases.items():
        assert human_duration(seconds) == text


def test_status_subresource_changes_status_only(client: Client) -> None:
    svc = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    _, made = client.json("POST", "/api/v1/namespaces/default/services", svc)
    lb = {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}]}}
    changed = dict(made, status=lb, spec={"ports": [{"port": 81}]})
    code, done = client.json("PUT", "/api/v1/namespaces/default/services/s/status", changed)
    assert code == 200 and done["status"] == lb and done["spec"] == made["spec"]
    code, done = client.json(
        "PATCH",
        "/api/v1/namespaces/default/services/s/status",
        {"status": {"loadBalancer": {"ingress": None}}},
        Content_Type="application/merge-patch+json",
    )
    assert code == 200 and done["status"] == {"loadBalancer": {}}
    _, read = client.json("GET", "/api/v1/namespaces/default/services/s/status")
    assert read["status"] == {"loadBalancer": {}}


def test_trainjob_state_column_is_the_last_conditions_type() -> None:
    tj = trainjob("tj1")
    tj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    tj["status"] = {"conditions": [{"type": "Suspended"}, {"type": "Complete"}]}
    doc = table(TRAINJOBS, [tj], parse_timestamp("2026-01-01T00:00:05Z"))
    assert [c["name"] for c in doc["columnDefinitions"]] == ["Name", "State", "Age"]
    assert doc["rows"][0]["cells"] == ["tj1", "Complete", "5s"]


def test_pod_log_container_rules(server: Server, client: Client) -> None:
    server.logs = lambda sim, ns, pod, container, previous, tail, ts: (
        f"{pod}/{container} {previous} {tail}\n"
    )
    two = {
        "metadata": {"name": "two"},
        "spec": {"containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]},
    }
    client.json("POST", PODS, two)
    code, status = client.json("GET", f"{PODS}/two/log")
    assert code == 400
    assert (
        status["message"] == "a container name must be specified for pod two, choose one of: [a b]"
    )
    code, _, headers, raw = client.call(
        "GET", f"{PODS}/two/log?container=b&previous=true&tailLines=3"
    )
    assert (code, raw) == (200, b"two/b True 3\n") and headers["Content-Type"].startswith(
        "text/plain"
    )
    code, status = client.json("GET", f"{PODS}/two/log?container=zz")
    assert code == 400 and status["message"] == "container zz is not valid for pod two"
    assert client.json("GET", f"{PODS}/nosuch/log")[0] == 404


def test_watch_resumes_from_a_version_without_replay(client: Client, sim: KubeSim) -> None:
    _, a = client.json("POST", CM, cm("a"))
    rv = a["metadata"]["resourceVersion"]
    client.json("POST", CM, cm("b"))
    client.json(
        "PATCH", f"{CM}/a", {"data": {"k": "2"}}, Content_Type="application/merge-patch+json"
    )
    resp = client.watch(f"{CM}?watch=true&resourceVersion={rv}&timeoutSeconds=30")
    assert resp.getheader("Transfer-Encoding") == "chunked"
    got = events(resp, 2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [
        ("ADDED", "b"),
        ("MODIFIED", "a"),
    ]
    client.json("DELETE", f"{CM}/b")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events(resp, 1)] == [
        ("DELETED", "b")
    ]
    sim.advance(30)  # timeoutSeconds counts virtual seconds
    assert resp.read() == b""


def test_watch_from_zero_starts_with_synthetic_added(client: Client, sim: KubeSim) -> None:
    client.json("POST", CM, cm("a"))
    client.json("POST", CM, cm("b"))
    resp = client.watch(f"{CM}?watch=1&resourceVersion=0&fieldSelector=metadata.name%3Da")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events(resp, 1)] == [
        ("ADDED", "a")
    ]
    client.json(
        "PATCH", f"{CM}/b", {"data": {"k": "z"}}, Content_Type="application/merge-patch+json"
    )
    client.json(
        "PATCH", f"{CM}/a", {"data": {"k": "z"}}, Content_Type="application/merge-patch+json"
    )
    assert [e["type"] for e in events(resp, 1)] == ["MODIFIED"]
    sim.faults.cut_watches()
    assert resp.read() == b""


def test_leaving_and_entering_the_selector_is_deleted_and_added(
    client: Client, sim: KubeSim
) -> None:
    client.json("POST", CM, cm("a", app="x"))
    resp = client.watch(f"{CM}?watch=true&labelSelector=app%3Dx")
    assert events(resp, 1)[0]["type"] == "ADDED"
    merge = "application/merge-patch+json"
    client.json("PATCH", f"{CM}/a", {"metadata": {"labels": {"app": "y"}}}, Content_Type=merge)
    client.json("PATCH", f"{CM}/a", {"metadata": {"labels": {"app": "x"}}}, Content_Type=merge)
    got = events(resp, 2)
    assert [e["type"] for e in got] == ["DELETED", "ADDED"]
    assert got[0]["object"]["metadata"]["labels"] == {"app": "x"}  # its content before it left
    sim.faults.cut_watches()
    assert resp.read() == b""


def test_too_old_version_is_an_error_event_410() -> None:
    sim = KubeSim(KubeConfig(watch_window=5), seed=3)
    with sim.serve() as server:
        client = Client(server)
        _, first = client.json("POST", CM, cm("c0"))
        for i in range(1, 10):
            client.json("POST", CM, cm(f"c{i}"))
        resp = client.watch(
            f"{CM}?watch=true&resourceVersion={first['metadata']['resourceVersion']}"
        )
        (event,) = events(resp, 1)
        assert event["type"] == "ERROR"
        assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")
        assert event["object"]["message"].startswith("too old resource version")
        assert resp.read() == b""


def test_bookmarks_only_when_asked(client: Client, sim: KubeSim) -> None:
    plain = client.watch(f"{CM}?watch=true")
    asked = client.watch(f"{CM}?watch=true&allowWatchBookmarks=true")
    sim.advance(61)
    (bookmark,) = events(asked, 1)
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"]["resourceVersion"] == str(sim.store.revision)
    sim.faults.cut_watches()
    assert plain.read() == b""
    assert asked.read() == b""


def test_refused_requests_do_not_apply_and_lost_replies_do(client: Client, sim: KubeSim) -> None:
    sim.faults.refuse_next("create", "configmaps", code=500)
    code, status = client.json("POST", CM, cm("a"))
    assert (code, status["reason"]) == (500, "InternalError")
    assert client.json("GET", f"{CM}/a")[0] == 404
    sim.faults.refuse_next("delete", "configmaps", "b", code=409)
    client.json("POST", CM, cm("b"))
    assert client.json("DELETE", f"{CM}/b")[0] == 409
    assert client.json("GET", f"{CM}/b")[0] == 200
    sim.faults.lose_next_reply("create", "configmaps")
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        client.call("POST", CM, json.dumps(cm("c")))
    fresh = http.client.HTTPConnection("127.0.0.1", client.port, timeout=10)
    fresh.request("GET", f"{CM}/c")
    assert fresh.getresponse().status == 200


def test_a_timed_out_request_answers_504_and_its_write_lands(client: Client, sim: KubeSim) -> None:
    """The timeout filter's 504 (server/filters/timeout.go): the handler goes on, so the write
    lands though its answer says the request did not complete."""
    sim.faults.time_out_after_effect("create", "configmaps")
    code, status = client.json("POST", CM, cm("t"))
    assert (code, status["reason"], status["details"]) == (504, "Timeout", {})
    assert status["message"] == "Timeout: request did not complete within the allotted timeout"
    assert client.json("GET", f"{CM}/t")[0] == 200
    code, _ = client.json("POST", CM, cm("u"))
    assert code == 201  # one request only


def test_control_endpoints_and_cli_advance(server: Server, client: Client, sim: KubeSim) -> None:
    code, answer = client.json("POST", "/sim/v1/advance", {"seconds": 12.5})
    assert code == 200 and answer["now"] == sim.clock.now()
    start = sim.clock.now()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "simulators.kubernetes.cli",
            "advance",
            "5",
            "--kubeconfig",
            server.kubeconfig,
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert sim.clock.now() == start + 5 and float(done.stdout) == start + 5
    _, now = client.json("GET", "/sim/v1/now")
    assert now["now"] == start + 5
    assert client.json("POST", "/sim/v1/advance", {"seconds": -1})[0] == 400


def test_cli_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    bad = (
        ["advance", "soon"],
        ["advance", "-3", "--url", "http://127.0.0.1:9"],
        ["advance", "nan", "--url", "http://127.0.0.1:9"],
        ["serve"],
        ["advance", "1", "--kubeconfig", "/nonexistent/k"],
        ["advance", "1", "--url", "http://127.0.0.1:9"],
        ["serve", "--kubeconfig", "/nonexistent/dir/k"],
    )
    for args in bad:
        with pytest.raises(SystemExit) as exited:
            cli.main(args)
        assert exited.value.code == 2, args
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (args, err)
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    helped = capsys.readouterr().out
    for option in ("--port", "--kubeconfig", "--kueue", "--realtime", "--seed"):
        assert option in helped


def test_same_seed_same_requests_byte_identical_bodies() -> None:
    def run() -> list[bytes]:
        sim = KubeSim(seed=11)
        out: list[bytes] = []
        with sim.serve() as server:
            client = Client(server)
            steps: list[tuple[str, str, Any, dict[str, str]]] = [
                ("POST", CM, cm("a", app="x"), {}),
                ("POST", TJ, trainjob("tj1"), {}),
                ("POST", CM, {"metadata": {"generateName": "gen-"}}, {}),
                (
                    "PATCH",
                    f"{TJ}/tj1",
                    {"spec": {"suspend": True}},
                    {"Content-Type": "application/merge-patch+json"},
                ),
                ("GET", TJ, None, {"Accept": TABLE}),
                ("GET", f"{CM}?labelSelector=app%3Dx", None, {}),
                ("DELETE", f"{CM}/a", None, {}),
                ("GET", "/apis", None, {"Accept": AGGREGATED}),
            ]
            for method, path, body, headers in steps:
                out.append(client.call(method, path, body, headers)[3])
                sim.advance(7)
        return out

    first, second = run(), run()
    assert first == second
    assert b'"uid"' in first[0]


def test_stop_ends_open_watches_promptly(sim: KubeSim) -> None:
    server = Server(sim).start()
    resp = Client(server).watch(f"{CM}?watch=true")
    ended: list[bytes] = []
    reader = threading.Thread(target=lambda: ended.append(resp.read()))
    reader.start()
    began = time.monotonic()
    server.stop()
    reader.join(timeout=5)
    assert not reader.is_alive() and ended == [b""]
    assert time.monotonic() - began < 3


def test_cli_serve_writes_a_kubeconfig_and_answers_advance(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "simulators.kubernetes.cli",
            "serve",
            "--kubeconfig",
            str(kubeconfig),
            "--seed",
            "4",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving http://127.0.0.1:"), line
        url = line.split()[1]
        assert f"server: {url}" in kubeconfig.read_text()
        assert cli.main(["advance", "3", "--kubeconfig", str(kubeconfig)]) == 0
        assert float(capsys.readouterr().out) == 3.0 + KubeSim(seed=4).clock.now()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_realtime_mode_moves_the_clock_with_the_wall(sim: KubeSim) -> None:
    start = sim.clock.now()
    with sim.serve(realtime=True) as server:
        resp = Client(server).watch(f"{CM}?watch=true&timeoutSeconds=1")
        assert resp.read() == b""  # ends once a virtual (here: wall) second has passed
    assert sim.clock.now() - start >= 1.0


def test_cli_serve_never_replaces_a_file_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``serve --kubeconfig ~/.kube/config`` (or /etc/passwd) must not overwrite that file; an
    empty --kubeconfig, a directory and a bad --url are one line and exit 2, not a traceback."""
    foreign = tmp_path / "config"
    foreign.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: production\n")
    bad = (
        ["serve", "--kubeconfig", str(foreign)],
        ["serve", "--kubeconfig", ""],
        ["serve", "--kubeconfig", str(tmp_path)],
        ["advance", "1", "--url", "notaurl"],
        ["advance", "1", "--url", "http://[::1"],
        ["serve", "--kubeconfig", str(tmp_path / ("a" * 300))],
    )
    for args in bad:
        with pytest.raises(SystemExit) as exited:
            cli.main(args)
        assert exited.value.code == 2, args
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (args, err)
    assert "production" in foreign.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config"]
