"""Descriptions of the fields whose type is another object, which the client's models drop.

The ``kubernetes`` client is generated from the OpenAPI v2 document, where a property that
is a ``$ref`` cannot carry a sibling ``description``; the generator drops it, so every
such field (``metadata``, ``spec``, ``podSelector``, ``ipBlock``...) has an empty
docstring and ``kubectl explain`` printed ``<no description>``. These are upstream's
texts for those fields (``k8s.io/api`` field comments), by model and JSON name, with a
fallback by JSON name alone.
"""

from __future__ import annotations

__all__ = ["ref_description"]

_MORE_META = ("More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
              "api-conventions.md#metadata")
_MORE_SPEC = ("More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
              "api-conventions.md#spec-and-status")
_PROBES = "More info: https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle#container-probes"

_BY_FIELD = {
    ("V1NetworkPolicy", "spec"): "spec represents the specification of the desired behavior "
                                 "for this NetworkPolicy.",
    ("V1NetworkPolicySpec", "podSelector"): (
        "podSelector selects the pods to which this NetworkPolicy object applies. The array of "
        "rules is applied to any pods selected by this field. An empty selector matches all "
        "pods in the policy's namespace. Multiple network policies can select the same set of "
        "pods. In this case, the ingress rules for each are combined additively. This field is "
        "optional. If it is not specified, it defaults to an empty selector."),
    ("V1NetworkPolicyPeer", "podSelector"): (
        "podSelector is a label selector which selects pods. This field follows standard label "
        "selector semantics; if present but empty, it selects all pods.\n\nIf namespaceSelector "
        "is also set, then the NetworkPolicyPeer as a whole selects the pods matching "
        "podSelector in the Namespaces selected by NamespaceSelector. Otherwise it selects the "
        "pods matching podSelector in the policy's own namespace."),
    ("V1NetworkPolicyPeer", "namespaceSelector"): (
        "namespaceSelector selects namespaces using cluster-scoped labels. This field follows "
        "standard label selector semantics; if present but empty, it selects all namespaces."
        "\n\nIf podSelector is also set, then the NetworkPolicyPeer as a whole selects the pods "
        "matching podSelector in the namespaces selected by namespaceSelector. Otherwise it "
        "selects all pods in the namespaces selected by namespaceSelector."),
    ("V1NetworkPolicyPeer", "ipBlock"): (
        "ipBlock defines policy on a particular IPBlock. If this field is set then neither of "
        "the other fields can be."),
    ("V1Pod", "spec"): f"Specification of the desired behavior of the pod. {_MORE_SPEC}",
    ("V1Pod", "status"): ("Most recently observed status of the pod. This data may not be up "
                          "to date. Populated by the system. Read-only. " + _MORE_SPEC),
    ("V1PodTemplateSpec", "spec"): f"Specification of the desired behavior of the pod. "
                                   f"{_MORE_SPEC}",
    ("V1Service", "spec"): f"Spec defines the behavior of a service. {_MORE_SPEC}",
    ("V1Service", "status"): ("Most recently observed status of the service. Populated by the "
                              "system. Read-only. " + _MORE_SPEC),
    ("V1Deployment", "spec"): "Specification of the desired behavior of the Deployment.",
    ("V1Deployment", "status"): "Most recently observed status of the Deployment.",
    ("V1DeploymentSpec", "selector"): (
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be "
        "the ones affected by this deployment. It must match the pod template's labels."),
    ("V1DeploymentSpec", "template"): (
        "Template describes the pods that will be created. The only allowed "
        "template.spec.restartPolicy value is \"Always\"."),
    ("V1DeploymentSpec", "strategy"): ("The deployment strategy to use to replace existing "
                                       "pods with new ones."),
    ("V1Namespace", "spec"): f"Spec defines the behavior of the Namespace. {_MORE_SPEC}",
    ("V1Namespace", "status"): f"Status describes the current status of a Namespace. "
                               f"{_MORE_SPEC}",
    ("V1Node", "spec"): f"Spec defines the behavior of a node. {_MORE_SPEC}",
    ("V1Node", "status"): ("Most recently observed status of the node. Populated by the "
                           "system. Read-only. " + _MORE_SPEC),
    ("V1Container", "securityContext"): (
        "SecurityContext defines the security options the container should be run with. If "
        "set, the fields of SecurityContext override the equivalent fields of "
        "PodSecurityContext. More info: "
        "https://kubernetes.io/docs/tasks/configure-pod-container/security-context/"),
    ("V1PodSpec", "securityContext"): (
        "SecurityContext holds pod-level security attributes and common container settings. "
        "Optional: Defaults to empty.  See type description for default values of each field."),
    ("V1PodSpec", "resources"): (
        "Resources is the total amount of CPU and Memory resources required by all containers "
        "in the pod."),
    ("V1PodStatus", "resources"): ("Resources represents the compute resource requests and "
                                   "limits that have been applied at the pod level."),
}
_BY_NAME = {
    "metadata": f"Standard object's metadata. {_MORE_META}",
    "spec": f"Spec defines the desired state of the object. {_MORE_SPEC}",
    "status": f"Status is the most recently observed state of the object. {_MORE_SPEC}",
    "livenessProbe": ("Periodic probe of container liveness. Container will be restarted if "
                      f"the probe fails. Cannot be updated. {_PROBES}"),
    "readinessProbe": ("Periodic probe of container service readiness. Container will be "
                       "removed from service endpoints if the probe fails. Cannot be updated. "
                       + _PROBES),
    "startupProbe": ("StartupProbe indicates that the Pod has successfully initialized. If "
                     "specified, no other probes are executed until this completes "
                     f"successfully. Cannot be updated. {_PROBES}"),
    "resources": ("Compute Resources required by this container. Cannot be updated. More info: "
                  "https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/"),
    "lifecycle": ("Actions that the management system should take in response to container "
                  "lifecycle events. Cannot be updated."),
    "affinity": "If specified, the pod's scheduling constraints",
    "dnsConfig": ("Specifies the DNS parameters of a pod. Parameters specified here will be "
                  "merged to the generated DNS configuration based on DNSPolicy."),
    "os": ("Specifies the OS of the containers in the pod. Some pod and container fields are "
           "restricted if this is set."),
    "involvedObject": "The object that this event is about.",
    "source": ("The component reporting this event. Should be a short machine understandable "
               "string."),
    "series": ("Data about the Event series this event represents or nil if it's a singleton "
               "Event."),
    "related": "Optional secondary object for more complex actions.",
    "sessionAffinityConfig": ("sessionAffinityConfig contains the configurations of session "
                              "affinity."),
    "selector": "A label query over a set of resources.",
    "template": "Template describes the pods that will be created.",
    "loadBalancer": "LoadBalancer contains the current status of the load-balancer, if one "
                    "is present.",
    "nodeInfo": ("Set of ids/uuids to uniquely identify the node. More info: "
                 "https://kubernetes.io/docs/reference/node/node-status/#info"),
    "daemonEndpoints": "Endpoints of daemons running on the Node.",
    "configSource": "Deprecated: Previously used to specify the source of the node's "
                    "configuration for the DynamicKubeletConfig feature.",
}


def ref_description(model: str, json_name: str) -> str:
    """Upstream's description of ``json_name`` in ``model`` ("" when none is known)."""
    return _BY_FIELD.get((model, json_name)) or _BY_NAME.get(json_name, "")
