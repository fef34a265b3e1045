"""Shortcuts that must not score: re-deploying from the prompt, deleting or opening all.

Each is a scripted agent that never diagnoses. The judge reads the state they leave:
the rebuilt policies lose what other teams put there (the monitoring rule, the
restricted egress, so the internet opens), so re-deploying is neither correct nor safe.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from netarena.common.agents import Observation
from netarena.common.runner import QueryPlan, RunConfig, Runner, plan_queries
from netarena.k8s import K8sApp
from netarena.k8s.manifests import render_policies
from netarena.k8s.model import parse_intended

pytestmark = pytest.mark.slow

ALLOW_ALL = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
             "metadata": {"name": "allow-all"},
             "spec": {"podSelector": {}, "ingress": [{}], "egress": [{}],
                      "policyTypes": ["Ingress", "Egress"]}}


class RewriteFromSpec:
    """Applies a fresh policy set rendered from the prompt's intended connectivity."""

    name = "rewrite-from-spec"

    async def act(self, observation: Observation) -> str:
        policies = render_policies(parse_intended(observation.text))
        manifest = "\n---\n".join(json.dumps(p) for p in policies)
        return f"```\nkubectl apply -f - <<'EOF'\n{manifest}\nEOF\n```"


class DeleteAll:
    """Deletes every NetworkPolicy."""

    name = "delete-all"

    async def act(self, observation: Observation) -> str:
        return "```\nkubectl delete networkpolicy --all\n```"


class AllowAll:
    """Adds one policy that lets every pod in and out."""

    name = "allow-all"

    async def act(self, observation: Observation) -> str:
        return f"```yaml\n{json.dumps(ALLOW_ALL)}\n```\n```\nkubectl apply -f -\n```"


def _rates(agent: object, n: int = 40) -> tuple[float, list[dict[str, object]]]:
    app = K8sApp()
    queries = plan_queries(app, QueryPlan(num_queries=n, seed=21))
    results = asyncio.run(Runner(app, agent, RunConfig(concurrency=2, max_turns=3)).run(queries))
    assert all(r.error is None for r in results), [r.error for r in results if r.error]
    solved = sum(r.correct and r.safe for r in results) / len(results)
    return solved, [r.details for r in results]


def test_rewrite_from_spec_scores_at_most_one_in_five() -> None:
    solved, details = _rates(RewriteFromSpec())
    assert solved <= 0.2, solved
    assert all(d["invalid_actions"] == 0 for d in details)  # the rewrite ran: the judge refused it


@pytest.mark.parametrize("agent", [DeleteAll(), AllowAll()], ids=["delete-all", "allow-all"])
def test_delete_all_and_allow_all_score_about_zero(agent: object) -> None:
    solved, _ = _rates(agent, 20)
    assert solved <= 0.05, solved
