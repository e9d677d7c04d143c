"""A container's environment as the kubelet makes it: the downward API and $(VAR) expansion."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from simulators.kubernetes import KubeConfig, KubeSim
from simulators.kubernetes.controllers.kubelet import starts
from simulators.kubernetes.env import container_env, expand
from simulators.kubernetes.resources import TRAINJOBS

POD = {
    "metadata": {
        "name": "p",
        "namespace": "ns",
        "uid": "u-1",
        "labels": {"jobset.sigs.k8s.io/restart-attempt": "2"},
        "annotations": {"dispatch/base": "7"},
    },
    "spec": {"nodeName": "node-1"},
}


def test_field_refs_and_expansion_of_earlier_entries() -> None:
    # kubelet_pods.go makeEnvironmentVariables; expansion.Expand: $(VAR) of an earlier entry,
    # $$ escapes, an undefined reference stays as written
    container = {
        "env": [
            {"name": "N", "value": "3"},
            {
                "name": "BASE",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['dispatch/base']"}},
            },
            {
                "name": "R",
                "valueFrom": {
                    "fieldRef": {
                        "fieldPath": "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"
                    }
                },
            },
            {
                "name": "MISSING",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['nope']"}},
            },
            {"name": "ATTEMPT", "value": "$(N)-x-$(BASE)$(R)"},
            {"name": "LATER", "value": "$(AFTER) $$(N) $(N"},
            {"name": "AFTER", "value": "a"},
            {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ]
    }
    env = container_env(POD, container)
    assert env["ATTEMPT"] == "3-x-72"
    assert env["MISSING"] == ""
    assert env["LATER"] == "$(AFTER) $(N) $(N"
    assert (env["NODE"], env["NAME"]) == ("node-1", "p")


@given(st.text(), st.dictionaries(st.text("ABC_", min_size=1, max_size=3), st.text(max_size=5)))
def test_expand_is_total_and_leaves_text_without_references_alone(
    text: str, defined: dict[str, str]
) -> None:
    out = expand(text, defined)
    assert isinstance(out, str)
    if "$" not in text:
        assert out == text


def test_the_kubelet_records_each_start_with_its_environment() -> None:
    sim = KubeSim(KubeConfig(default_run_seconds=None))
    sim.create(
        TRAINJOBS,
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "tj"},
            "spec": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {
                    "numNodes": 2,
                    "env": [
                        {
                            "name": "RA",
                            "valueFrom": {
                                "fieldRef": {
                                    "fieldPath": "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"
                                }
                            },
                        },
                        {"name": "WHO", "value": "rank-$(RA)"},
                    ],
                },
            },
        },
        "default",
    )
    sim.advance(5)
    seen = [s for s in starts(sim.cluster) if s.container == "node"]
    assert len(seen) == 2
    assert {s.env["WHO"] for s in seen} == {"rank-0"}
    assert sorted(s.env["PET_NODE_RANK"] for s in seen) == ["0", "1"]
