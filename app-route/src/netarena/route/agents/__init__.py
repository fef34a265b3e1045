"""Calibration agents: the reference dispatcher and the scripted baselines that must not score.

They answer from observation text and sit above ``static`` and ``frr``, whose readers they reuse.
"""
