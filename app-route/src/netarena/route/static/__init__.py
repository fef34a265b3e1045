"""Static routing queries: faults, their injection, the episode, prompts and the reference.

A sibling of ``frr``: neither imports the other.
"""
