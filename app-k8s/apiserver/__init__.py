"""The embedded Kubernetes API server: a cluster's state, served to the real ``kubectl``.

One entry point: build an ``ObjectStore`` (the cluster's objects, with the API server's
write semantics), fill it (``bootstrap`` a kind-like cluster from a
``cluster_profile``, then ``deploy`` an application into it), and serve it with
``ApiServer`` on loopback. The modules of this
package are its parts: kinds and errors (``kinds``), the store and its controllers
(``store``, ``workloads``, ``derived``), request handling (``server``), discovery and
OpenAPI (``discovery``), server-side printing (``tables``), patching (``patch``),
defaulting and validation (``defaults``, ``schema``) and selectors (``selectors``).
"""

from netarena.k8s.apiserver.cluster import ClusterProfile, bootstrap, cluster_profile, deploy
from netarena.k8s.apiserver.kinds import ApiError
from netarena.k8s.apiserver.server import ApiServer
from netarena.k8s.apiserver.store import ObjectStore

__all__ = ["ApiError", "ApiServer", "ClusterProfile", "ObjectStore", "bootstrap",
           "cluster_profile", "deploy"]
