"""Which model-call failures belong to the infrastructure rather than to the agent.

A provider that refuses the key, an endpoint that does not answer, an unknown model name or
rate limits that outlast the retries say nothing about how well the agent operates a
network: a query that ends on one is left unscored (and a resume plays it again), and the
same failure on the start-up check ends the run before its first query. Everything else a
model call can raise (a context window exceeded, a content filter, a reply that times out)
is the agent's own failure and is scored.

The classes are matched by name along the exception's MRO, so LiteLLM is not imported here.
"""

from __future__ import annotations

__all__ = ["infrastructure_failure", "KEY_HINT"]

KEY_HINT = ("set the provider's key (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...), MODEL_API_BASE "
            "for a local server; see env.list.example")
"""What to do about missing or refused credentials."""

_INFRASTRUCTURE = {
    "AuthenticationError": "the provider refused the credentials: " + KEY_HINT,
    "PermissionDeniedError": "the provider refused access to this model with these credentials",
    "NotFoundError": "the provider does not know this model (check the model name, and "
                     "MODEL_API_BASE if set)",
    "LiteLLMUnknownProvider": "LiteLLM knows no provider for this model name (write it as "
                              "provider/model, e.g. openai/gpt-4o-mini)",
    "PaymentRequiredError": "the provider's account has no credit left",
    "BudgetExceededError": "the LiteLLM budget is spent",
    "RateLimitError": "rate limited by the provider, still after LiteLLM's retries",
    "APIConnectionError": "the model's endpoint does not answer (check MODEL_API_BASE and the "
                          "network)",
    "ServiceUnavailableError": "the provider is unavailable",
    "BadGatewayError": "the provider's gateway failed",
    "InternalServerError": "the provider failed on its side",
}
"""Exception class name → what it means for the user (first match along the MRO wins)."""

_NOT_INFRASTRUCTURE = ("Timeout",)
"""A reply that takes too long is the agent's latency, not an outage."""

_MISSING_KEY = ("missing credentials", "api_key client option must be set", "no api key",
                "api key not found")
"""How a missing key reads when LiteLLM reports it as another error (an internal one)."""


def infrastructure_failure(exc: BaseException) -> str | None:
    """What went wrong outside the agent when ``exc`` is an infrastructure failure, else ``None``.

    Args:
        exc: What a model call (``litellm.acompletion``) raised.

    Returns:
        A sentence for the user (what failed and what to check), or ``None`` when the
        failure is the agent's own (it is then scored).
    """
    names = [cls.__name__ for cls in type(exc).__mro__]
    if names[0] in _NOT_INFRASTRUCTURE:
        return None
    if any(marker in str(exc).lower() for marker in _MISSING_KEY):
        return "no credentials for the provider: " + KEY_HINT
    for name in names:
        if name in _INFRASTRUCTURE:
            return _INFRASTRUCTURE[name]
    return None
