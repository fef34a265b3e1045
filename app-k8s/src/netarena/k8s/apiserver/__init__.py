"""The embedded Kubernetes API server: a cluster's state, served to the real ``kubectl``.

One entry point: build an ``ObjectStore`` (the cluster's objects, with the API server's
write semantics), fill it (``bootstrap`` a kind-like cluster from a
``cluster_profile``, then ``deploy`` an application into it), and serve it with
``ApiServer`` on loopback. The modules are its parts, by concern: kinds and errors
(``kinds``); the store and its controllers (``store``, ``workloads``, ``status``,
``derived``, ``fields``, ``watch``); the cluster's contents (``cluster``, ``events``,
``rbac``, ``roles``); requests (``server``, ``transport``, ``tls``, ``protobuf``); discovery and
schemas (``discovery``, ``models``, ``schema``); printing (``tables``); patching
(``patch``); defaulting and validation (``defaults``); selectors (``selectors``); names
(``names``); and what runs inside pods (``probes``, ``logs``).
"""

from netarena.k8s.apiserver.cluster import bootstrap
from netarena.k8s.apiserver.kinds import ApiError
from netarena.k8s.apiserver.podruntime import ExecResult, PodRuntime
from netarena.k8s.apiserver.profile import ClusterProfile, cluster_profile
from netarena.k8s.apiserver.server import ApiServer
from netarena.k8s.apiserver.store import ObjectStore

__all__ = ["ApiError", "ApiServer", "ClusterProfile", "ExecResult", "ObjectStore",
           "PodRuntime", "bootstrap", "cluster_profile"]
