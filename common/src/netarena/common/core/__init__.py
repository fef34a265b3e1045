"""The core loop: queries, apps and episodes, agents, the runner and statistics.

Nothing here imports the other subpackages of ``netarena.common``; they import it.
"""
