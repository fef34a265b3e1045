"""``ObjectStore.shared``: the read-only copies the judge and the kubelet read after each write.

They are copied once per change of their kind; what must hold is that they never show a
state the store is no longer in, whichever write (or controller) changed it.
"""

from __future__ import annotations

import pytest

from netarena.k8s.apiserver import ObjectStore
from tests.k8s.test_store import deployment, policy, service

KINDS = ("Pod", "Namespace", "NetworkPolicy", "Service", "Deployment")


def _agree(store: ObjectStore) -> None:
    for kind in KINDS:
        assert store.shared(kind) == store.list(kind), kind


class _Clock:
    """Time that moves only when told: a controller's status stamps show when it ran."""

    now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> _Clock:
    return _Clock()


@pytest.fixture
def store(clock: _Clock) -> ObjectStore:
    s = ObjectStore(seed=3, clock=clock)
    s.create(deployment("cartservice", 7070, replicas=2))
    s.create(service("cartservice", 7070, "grpc"))
    s.create(policy("cartservice", ingress=[{"ports": [{"port": 7070}]}]))
    return s


def test_a_kind_is_copied_again_only_once_it_changed(store: ObjectStore) -> None:
    pods, policies = store.shared("Pod"), store.shared("NetworkPolicy")
    store.patch("NetworkPolicy", "default", "cartservice",
                {"spec": {"ingress": [{"ports": [{"port": 7071}]}]}}, "merge")
    assert store.shared("Pod") is pods  # no pod changed
    assert store.shared("NetworkPolicy") is not policies
    assert store.shared("NetworkPolicy")[0]["spec"]["ingress"][0]["ports"][0]["port"] == 7071
    _agree(store)


@pytest.mark.parametrize("change", ["scale", "delete-pod", "delete-namespace", "apply-new"])
def test_every_write_and_controller_shows_in_the_shared_copies(
    store: ObjectStore, clock: _Clock, change: str
) -> None:
    _agree(store)  # cached before the change
    clock.now += 60
    if change == "scale":  # the controller adds a pod and rewrites the status in place
        store.patch("Deployment", "default", "cartservice", {"spec": {"replicas": 3}}, "merge")
    elif change == "delete-pod":  # the controller replaces it and rewrites the status
        store.delete("Pod", "default", store.list("Pod", "default")[0]["metadata"]["name"])
    elif change == "delete-namespace":
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
        _agree(store)
        store.delete("Namespace", None, "team")
    else:  # server-side apply of a new object sets its managed fields after the create
        store.apply(policy("frontend"), "kubectl")
    _agree(store)


def test_a_derived_kind_has_no_shared_copy(store: ObjectStore) -> None:
    with pytest.raises(ValueError, match="derived"):
        store.shared("Endpoints")
