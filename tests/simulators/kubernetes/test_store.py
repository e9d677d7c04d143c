"""The store's rules: resourceVersions, uids, conflicts, preconditions, deletion, events, indexes."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from dispatch_core import VirtualClock
from simulators.kubernetes.config import KubeConfig
from simulators.kubernetes.controllers.base import Cluster, Runner
from simulators.kubernetes.controllers.gc import GarbageCollector
from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.objects import clone, owner_reference
from simulators.kubernetes.resources import JOBS, NAMESPACES, PODS, TRAINJOBS
from simulators.kubernetes.selectors import FieldSelector, LabelSelector
from simulators.kubernetes.store import Store, field_selectable


def make_store(seed: int = 0, window: int = 10_000) -> tuple[Store, VirtualClock]:
    clock = VirtualClock()
    store = Store(rng=random.Random(seed), now=clock.now, window=window)
    store.create(NAMESPACES, "", {"metadata": {"name": "default"}})
    return store, clock


def trainjob(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    }


def pod(name: str, node: str = "", **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "labels": dict(labels)}, "spec": spec}


def test_create_sets_server_fields_and_a_new_version_per_write() -> None:
    store, clock = make_store()
    made = store.create(TRAINJOBS, "default", trainjob("a"))
    m = made["metadata"]
    assert m["namespace"] == "default"
    assert m["generation"] == 1
    assert m["creationTimestamp"] == "2026-01-01T00:00:00Z"
    assert int(m["resourceVersion"]) == store.revision
    clock.advance(5)
    other = store.create(TRAINJOBS, "default", trainjob("b"))
    assert int(other["metadata"]["resourceVersion"]) == int(m["resourceVersion"]) + 1
    assert other["metadata"]["uid"] != m["uid"]
    assert other["metadata"]["creationTimestamp"] == "2026-01-01T00:00:05Z"


def test_uids_are_seeded_and_never_reused() -> None:
    first, _ = make_store(seed=7)
    second, _ = make_store(seed=7)
    a = first.create(TRAINJOBS, "default", trainjob("a"))["metadata"]["uid"]
    b = second.create(TRAINJOBS, "default", trainjob("a"))["metadata"]["uid"]
    assert a == b
    first.delete(TRAINJOBS, "default", "a")
    again = first.create(TRAINJOBS, "default", trainjob("a"))["metadata"]["uid"]
    assert again != a


def test_create_refuses_a_taken_name_a_missing_namespace_and_a_bad_name() -> None:
    store, _ = make_store()
    store.create(TRAINJOBS, "default", trainjob("a"))
    with pytest.raises(ApiError) as taken:
        store.create(TRAINJOBS, "default", trainjob("a"))
    assert (taken.value.code, taken.value.reason) == (409, "AlreadyExists")
    assert taken.value.message == 'trainjobs.trainer.kubeflow.org "a" already exists'
    with pytest.raises(ApiError) as missing:
        store.create(TRAINJOBS, "nowhere", trainjob("a"))
    assert (missing.value.code, missing.value.message) == (404, 'namespaces "nowhere" not found')
    with pytest.raises(ApiError) as bad:
        store.create(TRAINJOBS, "default", trainjob("Not_Valid"))
    assert bad.value.code == 422
    assert bad.value.details["causes"][0]["field"] == "metadata.name"


def test_a_stale_update_is_a_conflict_and_a_custom_resource_needs_a_version() -> None:
    store, _ = make_store()
    made = store.create(TRAINJOBS, "default", trainjob("a"))
    fresh = dict(made, spec={"suspend": True})
    updated = store.update(TRAINJOBS, "default", "a", fresh)
    assert updated["metadata"]["generation"] == 2
    with pytest.raises(ApiError) as stale:
        store.update(TRAINJOBS, "default", "a", dict(made, spec={"suspend": False}))
    assert (stale.value.code, stale.value.reason) == (409, "Conflict")
    assert "the object has been modified" in stale.value.message
    unversioned = dict(updated)
    unversioned["metadata"] = {
        k: v for k, v in updated["metadata"].items() if k != "resourceVersion"
    }
    with pytest.raises(ApiError) as needs:
        store.update(TRAINJOBS, "default", "a", unversioned)
    assert needs.value.code == 422


def test_an_update_that_changes_nothing_writes_nothing() -> None:
    store, _ = make_store()
    made = store.create(TRAINJOBS, "default", trainjob("a"))
    before = store.revision
    same = store.update(TRAINJOBS, "default", "a", made)
    assert same["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    assert store.revision == before


def test_status_is_its_own_subresource() -> None:
    store, _ = make_store()
    made = store.create(TRAINJOBS, "default", dict(trainjob("a"), status={"x": 1}))
    assert "status" not in made
    with_status = store.update(
        TRAINJOBS, "default", "a", dict(made, status={"conditions": []}), subresource="status"
    )
    assert with_status["status"] == {"conditions": []}
    assert with_status["metadata"]["generation"] == 1
    main = store.update(TRAINJOBS, "default", "a", dict(with_status, status={"lost": True}))
    assert main["status"] == {"conditions": []}


def test_delete_preconditions_are_conflicts() -> None:
    store, _ = make_store()
    made = store.create(TRAINJOBS, "default", trainjob("a"))
    with pytest.raises(ApiError) as wrong:
        store.delete(TRAINJOBS, "default", "a", uid="wrong-uid")
    assert wrong.value.code == 409
    assert wrong.value.message == (
        'Operation cannot be fulfilled on trainjobs.trainer.kubeflow.org "a": Precondition failed: '
        f"UID in precondition: wrong-uid, UID in object meta: {made['metadata']['uid']}"
    )
    with pytest.raises(ApiError) as version:
        store.delete(TRAINJOBS, "default", "a", resource_version="1")
    assert version.value.code == 409
    store.delete(TRAINJOBS, "default", "a", uid=made["metadata"]["uid"])
    with pytest.raises(ApiError) as gone:
        store.get(TRAINJOBS, "default", "a")
    assert gone.value.code == 404


def test_finalizers_hold_a_deletion_until_they_are_removed() -> None:
    store, _ = make_store()
    made = store.create(
        TRAINJOBS, "default", dict(trainjob("a"), metadata={"name": "a", "finalizers": ["x/y"]})
    )
    marked = store.delete(TRAINJOBS, "default", "a")
    assert marked["metadata"]["deletionTimestamp"]
    assert store.peek(TRAINJOBS, "default", "a") is not None
    current = store.get(TRAINJOBS, "default", "a")
    current["metadata"]["finalizers"] = []
    store.update(TRAINJOBS, "default", "a", current)
    assert store.peek(TRAINJOBS, "default", "a") is None
    del made


def test_a_bound_running_pod_is_deleted_gracefully() -> None:
    store, clock = make_store()
    store.create(PODS, "default", pod("p", node="node-0"))
    marked = store.delete(PODS, "default", "p")
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
    assert marked["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:30Z"
    store.finish_deletion(PODS, "default", "p")
    assert store.peek(PODS, "default", "p") is None
    store.create(PODS, "default", pod("q"))
    store.delete(PODS, "default", "q")
    assert store.peek(PODS, "default", "q") is None
    del clock


def test_events_resume_from_a_version_and_are_gone_past_the_window() -> None:
    store, _ = make_store(window=3)
    start = store.revision
    for name in "abcd":
        store.create(TRAINJOBS, "default", trainjob(name))
    with pytest.raises(ApiError) as too_old:
        store.events_since(TRAINJOBS, start)
    assert too_old.value.code == 410
    assert too_old.value.message.startswith(f"too old resource version: {start} (")
    recent = store.events_since(TRAINJOBS, start + 2)
    assert [e.object["metadata"]["name"] for e in recent] == ["c", "d"]
    assert [e.type for e in recent] == ["ADDED", "ADDED"]


def test_label_selected_lists_use_the_index_and_page_with_continue() -> None:
    store, _ = make_store()
    for i in range(10):
        store.create(TRAINJOBS, "default", trainjob(f"job-{i}", team="a" if i % 2 else "b"))
    selected = store.list(TRAINJOBS, "default", labels=LabelSelector.parse("team=a"))
    assert [o["metadata"]["name"] for o in selected.items] == [f"job-{i}" for i in (1, 3, 5, 7, 9)]
    first = store.list(TRAINJOBS, "default", limit=4)
    assert len(first.items) == 4 and first.continue_token and first.remaining == 6
    rest = store.list(TRAINJOBS, "default", continue_token=first.continue_token)
    assert [o["metadata"]["name"] for o in first.items + rest.items] == sorted(
        f"job-{i}" for i in range(10)
    )
    by_name = store.list(
        TRAINJOBS,
        "default",
        fields=FieldSelector.parse("metadata.name=job-3", field_selectable(TRAINJOBS)),
    )
    assert [o["metadata"]["name"] for o in by_name.items] == ["job-3"]


def make_cluster() -> tuple[Store, Runner]:
    store, clock = make_store()
    cluster = Cluster(store, clock, random.Random(0), None)
    return store, Runner(cluster, [GarbageCollector(cluster)])


def test_background_deletion_collects_dependents() -> None:
    store, runner = make_cluster()
    owner = store.create(TRAINJOBS, "default", trainjob("a"))
    store.create(
        JOBS,
        "default",
        {"metadata": {"name": "a-0", "ownerReferences": [owner_reference(owner)]}, "spec": {}},
    )
    runner.settle()
    assert store.peek(JOBS, "default", "a-0") is not None
    store.delete(TRAINJOBS, "default", "a", propagation="Background")
    runner.settle()
    assert store.peek(JOBS, "default", "a-0") is None


def test_foreground_deletion_removes_dependents_first() -> None:
    store, runner = make_cluster()
    owner = store.create(TRAINJOBS, "default", trainjob("a"))
    store.create(
        JOBS,
        "default",
        {"metadata": {"name": "a-0", "ownerReferences": [owner_reference(owner)]}, "spec": {}},
    )
    marked = store.delete(TRAINJOBS, "default", "a", propagation="Foreground")
    assert marked["metadata"]["finalizers"] == ["foregroundDeletion"]
    runner.settle()
    assert store.peek(JOBS, "default", "a-0") is None
    assert store.peek(TRAINJOBS, "default", "a") is None


def test_the_collector_acts_on_a_cascading_deletion_gc_seconds_after_it_saw_it() -> None:
    """As kube-controller-manager's collector, which works from its informers' events after
    the DELETE answered: each marked owner waits its turn (KubeConfig.gc_seconds)."""
    store, clock = make_store()
    cluster = Cluster(store, clock, random.Random(0), KubeConfig(gc_seconds=0.5))
    runner = Runner(cluster, [GarbageCollector(cluster)])
    owner = store.create(TRAINJOBS, "default", trainjob("a"))
    dependent = {"metadata": {"name": "a-0", "ownerReferences": [owner_reference(owner)]}}
    store.create(JOBS, "default", {**dependent, "spec": {}})
    store.delete(TRAINJOBS, "default", "a", propagation="Foreground")
    runner.settle()
    assert store.peek(TRAINJOBS, "default", "a")["metadata"]["deletionTimestamp"]  # type: ignore[index]
    runner.advance(0.4)
    assert store.peek(TRAINJOBS, "default", "a") is not None
    assert "deletionTimestamp" not in store.peek(JOBS, "default", "a-0")["metadata"]  # type: ignore[index]
    runner.advance(0.1)  # the owner's turn: its dependent is marked (foreground)
    assert store.peek(JOBS, "default", "a-0")["metadata"]["deletionTimestamp"]  # type: ignore[index]
    assert store.peek(TRAINJOBS, "default", "a") is not None  # blocked by it
    runner.advance(0.4)
    assert store.peek(JOBS, "default", "a-0") is not None
    runner.advance(0.1)  # the dependent's own turn: it goes, and so does its owner
    assert store.peek(JOBS, "default", "a-0") is None
    assert store.peek(TRAINJOBS, "default", "a") is None
    orphaned = store.create(JOBS, "default", {"metadata": {"name": "j"}, "spec": {}})
    store.create(
        PODS,
        "default",
        dict(pod("j-0"), metadata={"name": "j-0", "ownerReferences": [owner_reference(orphaned)]}),
    )
    store.delete(JOBS, "default", "j")  # a Job orphans by default
    runner.settle()
    assert store.peek(JOBS, "default", "j") is not None
    runner.advance(0.5)
    assert store.peek(JOBS, "default", "j") is None
    assert "ownerReferences" not in store.peek(PODS, "default", "j-0")["metadata"]  # type: ignore[index]


def test_controllers_react_to_an_event_reaction_seconds_after_it() -> None:
    store, clock = make_store()
    cluster = Cluster(store, clock, random.Random(0), KubeConfig(reaction_seconds=0.2))
    runner = Runner(cluster, [GarbageCollector(cluster)])
    owner = store.create(TRAINJOBS, "default", trainjob("a"))
    dependent = {"metadata": {"name": "a-0", "ownerReferences": [owner_reference(owner)]}}
    store.create(JOBS, "default", {**dependent, "spec": {}})
    store.delete(TRAINJOBS, "default", "a", propagation="Background")
    runner.settle()
    assert store.peek(JOBS, "default", "a-0") is not None  # the collector has not seen it yet
    runner.advance(0.19)
    assert store.peek(JOBS, "default", "a-0") is not None
    runner.advance(0.01)
    assert store.peek(JOBS, "default", "a-0") is None


def test_a_job_orphans_its_dependents_by_default() -> None:
    store, runner = make_cluster()
    job = store.create(JOBS, "default", {"metadata": {"name": "j"}, "spec": {}})
    store.create(
        PODS,
        "default",
        dict(pod("j-0"), metadata={"name": "j-0", "ownerReferences": [owner_reference(job)]}),
    )
    store.delete(JOBS, "default", "j")
    runner.settle()
    assert store.peek(JOBS, "default", "j") is None
    left = store.get(PODS, "default", "j-0")
    assert "ownerReferences" not in left["metadata"]


def test_writes_answer_a_copy_or_with_copy_false_the_stored_object() -> None:
    store, _ = make_store()
    made = store.create(TRAINJOBS, "default", trainjob("a"))
    assert made == store.peek(TRAINJOBS, "default", "a")
    assert made is not store.peek(TRAINJOBS, "default", "a")
    body = trainjob("b")
    stored = store.create(TRAINJOBS, "default", body, owned=True, copy=False)
    assert stored is store.peek(TRAINJOBS, "default", "b")
    assert stored is body  # handed over: stored as given, not copied

    def label(obj: dict[str, Any]) -> None:
        obj["metadata"]["labels"]["x"] = "1"

    changed = store.mutate(TRAINJOBS, "default", "a", label, copy=False)
    assert changed is store.peek(TRAINJOBS, "default", "a")
    again = store.update(TRAINJOBS, "default", "a", changed)
    assert again == changed and again is not changed
    kept = store.peek(TRAINJOBS, "default", "a")
    store.update(TRAINJOBS, "default", "a", {**changed, "spec": {"x": 1}}, copy=False)
    assert kept == again  # the version replaced is left as it was: nothing changes it in place


def test_a_delete_leaves_the_version_it_replaces_as_it_was() -> None:
    store, _ = make_store()
    store.create(TRAINJOBS, "default", {**trainjob("a"), "metadata": {"name": "a"}})
    store.mutate(TRAINJOBS, "default", "a", lambda o: o["metadata"].update(finalizers=["f"]))
    before = store.peek(TRAINJOBS, "default", "a")
    assert before is not None
    snapshot = store.get(TRAINJOBS, "default", "a")
    marked = store.delete(TRAINJOBS, "default", "a", copy=False)
    assert marked is store.peek(TRAINJOBS, "default", "a")
    assert marked["metadata"]["deletionTimestamp"]
    assert before == snapshot  # the marked version is a new one
    gone_before = store.peek(TRAINJOBS, "default", "a")
    remove = store.mutate(TRAINJOBS, "default", "a", lambda o: o["metadata"].pop("finalizers"))
    assert store.peek(TRAINJOBS, "default", "a") is None
    assert gone_before == marked
    assert remove["metadata"]["resourceVersion"] == str(store.revision)


def test_the_event_window_keeps_each_version_as_it_was_written() -> None:
    store, _ = make_store()
    seen: list[tuple[str, Any, Any]] = []
    store.listeners.append(
        lambda e: seen.append((e.type, clone(e.object), None if e.old is None else clone(e.old)))
    )
    start = store.revision
    store.create(TRAINJOBS, "default", trainjob("a", team="x"))
    store.create(PODS, "default", pod("p"))
    store.mutate(TRAINJOBS, "default", "a", lambda o: o["spec"].update(suspend=True))
    store.mutate(TRAINJOBS, "default", "a", lambda o: o["metadata"].update(finalizers=["f"]))
    store.delete(TRAINJOBS, "default", "a")
    store.mutate(TRAINJOBS, "default", "a", lambda o: o["metadata"].pop("finalizers"))
    store.create(TRAINJOBS, "default", trainjob("a"))
    events = store.events_since(TRAINJOBS, start)
    expected = [s for s in seen if s[1]["kind"] == "TrainJob"]
    assert [(e.type, e.object, e.old) for e in events] == expected
    kinds = ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED", "ADDED"]
    assert [e.type for e in events] == kinds
    # each read is a new copy: changing one changes neither the window nor the store
    events[-1].object["spec"] = {}
    assert store.events_since(TRAINJOBS, start)[-1].object == expected[-1][1]
    assert store.peek(TRAINJOBS, "default", "a") == expected[-1][1]
    # what the window holds is encoded: no stored object, no superseded version
    table = store.table(TRAINJOBS)
    assert all(isinstance(e.object, bytes) for e in table.events)
    assert all(e.old is None or isinstance(e.old, bytes) for e in table.events)


def test_the_event_window_keeps_a_tree_that_is_not_plain_json_as_it_is() -> None:
    class Text(str):
        pass

    store, _ = make_store()
    start = store.revision
    store.create(TRAINJOBS, "default", trainjob("a", team=Text("x")))
    (event,) = store.events_since(TRAINJOBS, start)
    assert event.object == store.peek(TRAINJOBS, "default", "a")
    assert isinstance(event.object["metadata"]["labels"]["team"], Text)


def test_an_encoding_is_made_once_per_stored_version() -> None:
    store, _ = make_store()
    made: list[str] = []

    def encode(obj: dict[str, Any]) -> bytes:
        made.append(obj["metadata"]["resourceVersion"])
        return json.dumps(obj).encode()

    store.create(TRAINJOBS, "default", trainjob("a"))
    first = store.stored(TRAINJOBS, "default", "a")
    assert store.encoding(TRAINJOBS, first, encode) == json.dumps(first).encode()
    assert store.encoding(TRAINJOBS, first, encode) == json.dumps(first).encode()
    assert made == [first["metadata"]["resourceVersion"]]
    copy = store.get(TRAINJOBS, "default", "a")  # not the stored object: encoded every time
    store.encoding(TRAINJOBS, copy, encode)
    assert len(made) == 2
    store.mutate(TRAINJOBS, "default", "a", lambda o: o["spec"].update(suspend=True))
    second = store.stored(TRAINJOBS, "default", "a")
    assert store.encoding(TRAINJOBS, second, encode) == json.dumps(second).encode()
    assert store.encoding(TRAINJOBS, first, encode) == json.dumps(first).encode()  # replaced
    assert len(made) == 4
    store.delete(TRAINJOBS, "default", "a")
    store.create(TRAINJOBS, "default", trainjob("a"))
    third = store.stored(TRAINJOBS, "default", "a")
    assert store.encoding(TRAINJOBS, third, encode) == json.dumps(third).encode()
    assert made[-1] == third["metadata"]["resourceVersion"] and len(made) == 5


def test_a_status_write_keeps_the_rest_and_leaves_the_version_it_replaces() -> None:
    store, _ = make_store()
    store.create(TRAINJOBS, "default", trainjob("a", team="x"))
    before = store.peek(TRAINJOBS, "default", "a")
    assert before is not None
    snapshot = clone(before)
    sent = store.get(TRAINJOBS, "default", "a")
    sent["spec"] = {"ignored": True}
    sent["metadata"]["labels"] = {"ignored": "yes"}
    sent["status"] = {"phase": "x"}
    done = store.update(TRAINJOBS, "default", "a", sent, subresource="status", copy=False)
    assert done["status"] == {"phase": "x"}
    assert done["spec"] == snapshot["spec"] and done["metadata"]["labels"] == {"team": "x"}
    assert done["metadata"]["resourceVersion"] != snapshot["metadata"]["resourceVersion"]
    assert before == snapshot  # the replaced version is as it was


def test_the_indexes_follow_every_write_whether_labels_and_owners_change_or_not() -> None:
    store, _ = make_store()
    owner = store.create(JOBS, "default", {"metadata": {"name": "j"}, "spec": {}})
    store.create(PODS, "default", pod("p", team="a"))

    def names(selector: str) -> list[str]:
        found = store.select(PODS, "default", labels=LabelSelector.parse(selector))
        return [o["metadata"]["name"] for o in found]

    def dependents() -> list[str]:
        return [o["metadata"]["name"] for _, o in store.dependents(owner["metadata"]["uid"])]

    store.mutate(PODS, "default", "p", lambda o: o["spec"].update(priority=1))  # labels kept
    assert names("team=a") == ["p"] and names("team") == ["p"]
    store.mutate(PODS, "default", "p", lambda o: o["metadata"]["labels"].update(team="b"))
    assert names("team=a") == [] and names("team=b") == ["p"]
    by_label = store.table(PODS).by_label
    store.mutate(PODS, "default", "p", lambda o: o["metadata"]["labels"].update(n=1))
    assert ("default", "p") in by_label[("n", "1")]
    store.mutate(PODS, "default", "p", lambda o: o["metadata"]["labels"].update(n="2"))
    assert ("n", "1") not in by_label
    assert ("default", "p") in by_label[("n", "2")]
    ref = owner_reference(owner)
    store.mutate(PODS, "default", "p", lambda o: o["metadata"].update(ownerReferences=[ref]))
    assert dependents() == ["p"]
    store.mutate(PODS, "default", "p", lambda o: o["spec"].update(priority=2))  # owners kept
    assert dependents() == ["p"]
    store.mutate(PODS, "default", "p", lambda o: o["metadata"].pop("ownerReferences"))
    assert dependents() == []
    assert names("team=b") == ["p"]
