"""The emulated network: its plan, intent and design, its Mininet build and live ``Network``.

Built on ``linux`` and ``sandbox``; it knows nothing of judging or faults.
"""
