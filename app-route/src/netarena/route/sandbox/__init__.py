"""The agent's shell sandbox: bounded commands, seccomp, size limits, reply parsing.

Built on ``linux``; it knows nothing of the network it runs in.
"""
