"""The self-hosted route recipe is a leaderboard path (no engine needed).

``scenarios/route/docker-compose.selfhosted.yml`` and ``selfhosted-workflow.yml``: the
assessment config is the route scenario's (no seed), the results file names the
submitter's AgentBeats id from the workflow, the client never gates on scores and the
results are kept whatever happened; the green server's token is required and only the
client holds it. Then two submitters run through the compose file's own
client command (its containers' URLs pointed at live agents on loopback) and the leaderboard
gives two rows.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
from pathlib import Path
from typing import Any

import json5
import pytest
import yaml

from netarena.common.launch import smoke_client
from netarena.common.launch.seccomp import PROFILE_FILE
from netarena.common.reporting.leaderboard import run_queries

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "scenarios" / "route"
COMPOSE = FOLDER / "docker-compose.selfhosted.yml"
WORKFLOW = FOLDER / "selfhosted-workflow.yml"
_VARIABLE = re.compile(r"\$\{(\w+)(?:(:?[-?])([^}]*))?\}")


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR-x}``, ``${VAR:-x}`` and ``${VAR:?error}``."""
    def value(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2) or "", m.group(3) or ""
        have = env.get(name)
        if op == ":?" and not have:
            raise ValueError(f"compose refuses to start: {arg}")
        if op == ":-":
            return have or arg
        if op == "-":
            return arg if have is None else have
        return have or ""
    return _VARIABLE.sub(value, text)


def _client() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())["services"]["agentbeats-client"]


def _option(command: list[str], name: str) -> list[str]:
    return [command[i + 1] for i, arg in enumerate(command) if arg == name]


def test_the_assessment_config_is_the_scenarios_with_a_fresh_seed() -> None:
    scenario = json5.loads((FOLDER / "scenario.json5").read_text())
    expected = scenario["components"]["gateway"]["config"]["assessment_config"]
    (config,) = _option(_client()["command"], "--config")
    assert json.loads(config) == expected
    assert expected["num_queries"] == 150 and expected["max_turns"] == 10
    assert "seed" not in expected


@pytest.mark.parametrize("app", ["malt", "route", "k8s"])
def test_no_shipped_scenario_pins_a_seed(app: str) -> None:
    scenario = json5.loads((ROOT / "scenarios" / app / "scenario.json5").read_text())
    assert "seed" not in scenario["components"]["gateway"]["config"]["assessment_config"]
    toml = (ROOT / "scenarios" / f"{app}.toml").read_text()
    assert not re.search(r"^seed\s*=", toml, re.M)


def test_results_name_the_submitters_id_and_scores_never_gate() -> None:
    client = _client()
    command = client["command"]
    assert "--expect-correctness" not in command
    ids = _option(command, "--agentbeats-id")
    assert ids[0].startswith("route_operator=${ROUTE_OPERATOR_ID:?")
    with pytest.raises(ValueError, match="ROUTE_OPERATOR_ID"):  # no id, no run
        interpolate(ids[0], {})
    assert interpolate(ids[0], {"ROUTE_OPERATOR_ID": "sub-1"}) == "route_operator=sub-1"
    # Nothing of the host but the output folder is mounted (the client is in the image).
    assert client["entrypoint"] == ["python", "-m", "netarena.common.launch.smoke_client"]
    assert client["volumes"] == ["${NETARENA_RESULTS:-./output}:/output"]


def test_the_green_token_is_required_and_shared_with_the_client_only() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    (client_token,) = services["agentbeats-client"]["environment"]
    assert client_token.startswith("NETARENA_TOKEN=${NETARENA_TOKEN:?")
    assert client_token in services["green-agent"]["environment"]
    assert "NETARENA_TOKEN" not in json.dumps(services["route_operator"])
    with pytest.raises(ValueError, match="NETARENA_TOKEN"):  # no token, no run
        interpolate(client_token, {})
    security = services["green-agent"]["security_opt"]
    assert f"seccomp=./{PROFILE_FILE}" in security and (FOLDER / PROFILE_FILE).is_file()


def test_the_workflow_passes_the_id_keeps_every_file_and_commits_to_results() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    (job,) = workflow["jobs"].values()
    assert job["runs-on"] == ["self-hosted", "netarena-route"]
    assert job["env"]["ROUTE_OPERATOR_ID"] == "${{ inputs.agentbeats_id }}"
    assert job["env"]["PURPLE_IMAGE"] == "${{ inputs.purple_image }}"
    steps = {step.get("name", step.get("uses")): step for step in job["steps"]}
    assert "docker-compose.selfhosted.yml up" in steps["Assessment"]["run"]
    for name in ("Stop", "Keep the results file"):
        assert steps[name]["if"] == "always()"
    assert steps["Keep the results file"]["with"]["path"] == "output/results.json"
    commit = steps["Commit the results file to results/"]["run"]
    assert 'cp output/results.json "results/${name}.json"' in commit and "git push" in commit
    assert job["env"]["NETARENA_RESULTS"].endswith("/output")
    token = steps["Token"]["run"]
    assert "openssl rand" in token and "::add-mask::" in token and "GITHUB_ENV" in token
    assert PROFILE_FILE in WORKFLOW.read_text()  # the recipe says to copy it beside the file


def test_the_client_names_ids_and_writes_for_the_folders_owner(tmp_path: Path) -> None:
    named = smoke_client.participants("route_operator", "http://route_operator:9019",
                                      ["route_operator=sub-1", "netarena_route="])
    assert named == {"route_operator": "sub-1"}
    unnamed = smoke_client.participants("route_operator", "http://route_operator:9019", [])
    assert unnamed == {"route_operator": "http://route_operator:9019"}
    if os.geteuid() == 0:  # as in a container run as root, writing into the user's folder
        os.chown(tmp_path, 4321, 4321)
    smoke_client.write_results(tmp_path / "results.json", {"status": "completed"})
    assert (tmp_path / "results.json").stat().st_uid == tmp_path.stat().st_uid
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_an_unwritable_output_fails_before_the_evaluation(tmp_path: Path) -> None:
    """Before, the file was written after the whole evaluation, and then refused."""
    missing = tmp_path / "no-such-folder" / "results.json"
    with pytest.raises(SystemExit, match="cannot write"):
        smoke_client.main(["--green", "http://127.0.0.1:9/", "--purple", "http://127.0.0.1:9/",
                           "--role", "route_operator", "--out", str(missing)])


def _argv(green: str, purple: str, out: Path, env: dict[str, str]) -> list[str]:
    """The compose file's client command, for agents on loopback and 4 queries."""
    argv = [interpolate(arg, env) for arg in _client()["command"]]
    argv = [green if a == "http://green-agent:9009" else
            purple if a == "http://route_operator:9019" else
            str(out) if a == "/output/results.json" else a for a in argv]
    config_at = argv.index("--config") + 1
    argv[config_at] = json.dumps({**json.loads(argv[config_at]), "num_queries": 4})
    return argv


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_submitters_through_the_recipe_are_two_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from netarena.a2a_llm import purple_app
    from netarena.common.core.agents import NullAgent
    from netarena.common.core.app import load_app
    from netarena.common.serving.server import green_app
    from tests.a2a.servers import serving

    route = load_app("route")
    results = tmp_path / "results"
    results.mkdir()

    async def submit(agent: Any, agentbeats_id: str) -> int:
        token = secrets.token_hex(24)  # the green server refuses requests without it
        async with (serving(lambda url: green_app(type(route), url, token=token)) as green,
                    serving(lambda url: purple_app(agent, url)) as purple):
            out = tmp_path / "output" / agentbeats_id / "results.json"
            out.parent.mkdir(parents=True)
            env = {"ROUTE_OPERATOR_ID": agentbeats_id, "NETARENA_ROUTE_ID": "netarena-route-id",
                   "NETARENA_TOKEN": token}
            for entry in _client()["environment"]:  # the client's environment, as compose's
                monkeypatch.setenv(*interpolate(entry, env).split("=", 1))
            argv = _argv(green, purple, out, env)
            code = await asyncio.to_thread(smoke_client.main, argv)
            (results / f"{agentbeats_id}-20260101-000000.json").write_text(out.read_text())
            return code

    assert asyncio.run(submit(route.reference_agent(), "submitter-a")) == 0
    assert asyncio.run(submit(NullAgent(), "submitter-b")) == 0  # a weak agent is a result
    docs = [json.loads(p.read_text()) for p in sorted(results.iterdir())]
    assert [d["participants"] for d in docs] == [
        {"netarena_route": "netarena-route-id", "route_operator": f"submitter-{x}"}
        for x in "ab"]
    seeds = {r["seed"] for d in docs for r in d["results"] if r["kind"] == "query"}
    assert len(seeds) == 2  # each assessment drew its own seed, and every record carries it
    (table,), problem = run_queries(tmp_path, ["leaderboard"])
    assert problem is None
    rows = {row[0]: dict(zip(table.columns, row, strict=True)) for row in table.rows}
    assert set(rows) == {"submitter-a", "submitter-b"}
    assert rows["submitter-a"]["Solved safely"] == 1.0 and rows["submitter-a"]["Queries"] == 4
    assert rows["submitter-b"]["Solved safely"] == 0.0
    assert str(rows["submitter-b"]["Max turns"]) == "10"
