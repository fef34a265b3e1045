"""Linux plumbing: namespaces, control groups, rtnetlink/nfnetlink/xfrm readers, kernel state.

The bottom of the route app: it knows kernels, not networks, sandboxes or faults.
"""
