"""The NetArena purple agent: LiteLLM strategies and reference solvers served over A2A.

``netarena purple --solver litellm --strategy react`` serves a model named by
``MODEL_NAME``; ``--solver reference --app malt`` serves that app's reference solver (one
server per app: solvers are app-specific and a purple agent is registered for one role);
``--solver null`` serves the agent that does nothing.
"""

from netarena.a2a_llm.server import PurpleExecutor, purple_app
from netarena.a2a_llm.strategies import STRATEGIES, LLMAgent, Strategy, from_env

__all__ = ["LLMAgent", "PurpleExecutor", "STRATEGIES", "Strategy", "from_env", "purple_app"]
