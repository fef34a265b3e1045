"""What runs inside the embedded cluster's pods: Online Boutique's containers and the tools in them.

The API server (``netarena.k8s.apiserver``) stores pods; this package is the node side it
is given (``ApiServer(pods=Kubelet(store))``): container logs (``logs``, with the
boutique's call graph and log lines in ``boutique`` and ``applogs``), ``kubectl exec`` into
a container (``shell``, with each image's contents in ``images``, BusyBox's applets in
``busybox`` and language runtimes in ``runtimes``), and the network probes run there
(``probes``: DNS answers through CoreDNS, NetworkPolicy, Service forwarding).
"""

from netarena.k8s.pods.kubelet import Kubelet

__all__ = ["Kubelet"]
