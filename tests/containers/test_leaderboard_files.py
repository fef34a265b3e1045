"""The AgentBeats v2 files (Amber manifests, scenario.json5), the leaderboard template and the
image workflow: consistent with the images, the server and each other (no engine needed)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import json5
import pytest
import yaml

from netarena.common.core.app import load_app
from netarena.common.serving.limits import ServerLimits
from netarena.common.serving.request import EvalRequest, parse_request

ROOT = Path(__file__).resolve().parents[2]
APPS = ("malt", "route", "k8s")
GATEWAY = ("https://raw.githubusercontent.com/RDI-Foundation/agentbeats-gateway/refs/tags/v0.3/"
           "amber-manifest.json5")


def _load(path: Path) -> dict:
    return json5.loads(path.read_text())


@pytest.mark.parametrize("app", APPS)
def test_scenario_wires_gateway_green_and_purple(app: str) -> None:
    folder = ROOT / "scenarios" / app
    scenario = _load(folder / "scenario.json5")
    green, purple = f"netarena_{app}", f"{app}_operator"
    components = scenario["components"]
    assert set(components) == {"gateway", green, purple}
    assert components["gateway"]["manifest"] == GATEWAY
    gateway = components["gateway"]["config"]
    assert gateway["participant_roles"] == {"green": green, "purple1": purple}
    for name in (green, purple):
        assert (folder / components[name]["manifest"]).is_file()
    assert {(b["to"], b["from"]) for b in scenario["bindings"]} == {
        ("#gateway.green", f"#{green}.a2a"), ("#gateway.purple1", f"#{purple}.a2a"),
        (f"#{green}.proxy", "#gateway.proxy")}
    assert scenario["exports"] == {"results": "#gateway.results"}
    # The purple component is named after its role: results files map the role to its id.
    assert set(scenario["metadata"]["agentbeats_ids"]) == {green, purple}
    assert components[purple]["config"]["app"] == app
    # The assessment config is a valid request for an unauthenticated requester, in every
    # shard the workflow may make (it adds shard_index, num_shards and num_instances).
    app_cls = type(load_app(app))
    for shard in (0, 19):
        config = {**gateway["assessment_config"], "shard_index": shard, "num_shards": 20,
                  "num_instances": 100}
        parse_request(EvalRequest(participants={purple: "http://127.0.0.1:8080/" + purple},
                                  config=config), app_cls, limits=ServerLimits())


@pytest.mark.parametrize("app", APPS)
def test_green_manifest_matches_its_image(app: str) -> None:
    manifest = _load(ROOT / "scenarios" / app / f"netarena-{app}.json5")
    program = manifest["program"]
    assert program["image"] == f"ghcr.io/OWNER/netarena-{app}:latest"
    assert program["entrypoint"] == f"netarena-entrypoint serve {app} --host 0.0.0.0 --port 9009"
    dockerfile = (ROOT / f"app-{app}" / "Dockerfile").read_text()
    assert f'ENTRYPOINT ["netarena-entrypoint", "serve", "{app}"]' in dockerfile
    assert program["network"]["endpoints"] == [{"name": "a2a_endpoint", "port": 9009}]
    assert manifest["provides"]["a2a"] == {"kind": "a2a", "endpoint": "a2a_endpoint"}
    assert manifest["slots"]["proxy"] == {"kind": "a2a"}
    assert "${slots.proxy.url}" in program["env"].values()  # every slot is referenced
    assert manifest["metadata"]["participant_roles"] == [f"{app}_operator"]


def test_purple_manifests_are_one_and_choose_the_agent_by_environment() -> None:
    texts = {(ROOT / "scenarios" / app / "netarena-purple.json5").read_text() for app in APPS}
    assert len(texts) == 1
    manifest = json5.loads(texts.pop())
    env = manifest["program"]["env"]
    assert env["NETARENA_SOLVER"] == "${config.solver}" and env["NETARENA_APP"] == "${config.app}"
    assert manifest["program"]["entrypoint"].startswith("netarena-entrypoint purple ")
    properties = manifest["config_schema"]["properties"]
    assert properties["solver"]["enum"] == ["reference", "litellm", "null"]


def test_leaderboard_template_has_the_queries_and_folders() -> None:
    folder = ROOT / "leaderboard"
    assert {p.name for p in (folder / "queries").iterdir()} == {
        "leaderboard.sql", "by-level.sql", "by-label.sql", "runs-not-ranked.sql",
        "agentbeats.json"}
    for name in ("results", "submissions"):
        assert (folder / name / ".gitkeep").is_file()
    readme = (folder / "README.md").read_text()
    assert "RDI-Foundation/agentbeats-leaderboard-template" in readme
    for sql in (folder / "queries").glob("*.sql"):  # over the app's preloaded table
        text = sql.read_text()
        assert "FROM results AS f" in text and "read_json" not in text.split("\n", 3)[-1]


def test_image_workflow_runs_only_tested_scripts() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "images.yml").read_text())
    (job,) = workflow["jobs"].values()
    runs = [step["run"] for step in job["steps"] if "run" in step]
    scripts = set()
    for run in runs:
        scripts |= set(re.findall(r"scripts/[\w.]+\.sh", run))
    assert scripts == {"scripts/containers.sh", "scripts/agentbeats_compose.sh",
                       "scripts/publish_images.sh"}
    for script in scripts:
        subprocess.run(["bash", "-n", str(ROOT / script)], check=True, timeout=30)
    publish = next(step for step in job["steps"] if step.get("name") == "Publish")
    assert publish["if"] == "github.event_name != 'pull_request'"
    assert job["permissions"] == {"contents": "read", "packages": "write"}
