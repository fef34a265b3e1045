"""OSPF and BGP on FRR routers: designs, faults, boxes, settling, the episode, solvers.

A sibling of ``static``: built on ``base`` and the groups below it, never on static code.
"""
