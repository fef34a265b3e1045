"""The judge: pingmesh probes, reachability, collateral damage and per-flow checks.

It measures the emulated network and knows nothing of how a query's faults were drawn.
"""
