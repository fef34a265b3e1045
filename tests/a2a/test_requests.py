"""Evaluation-request validation: unit checks, then rejections over real HTTP."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest
from a2a.types import TaskState

from netarena.common.core.errors import ConfigError
from netarena.common.core.types import Query
from netarena.common.serving.request import load_request, parse_request
from netarena.common.serving.server import green_app
from tests.a2a.conftest import evaluate
from tests.a2a.servers import serving, stream_03
from tests.helpers.toy import ToyApp

PURPLE = "http://127.0.0.1:9/"


def parse(config: dict, participants: dict | None = None):
    who = {"agent": PURPLE} if participants is None else participants
    return parse_request(load_request(json.dumps({"participants": who, "config": config})), ToyApp)


def test_core_keys_map_to_plan_and_run() -> None:
    req = parse({"num_queries": 5, "levels": [1, 3], "labels": ["big"], "seed": 4,
                 "concurrency": 2, "max_turns": 7, "turn_timeout_s": 9.5, "shard_index": 1,
                 "num_shards": 3, "prompt_style": "fewshot_cot", "episode_timeout_s": 60})
    assert (req.plan.num_queries, req.plan.levels, req.plan.labels, req.plan.seed) == \
        (5, (1, 3), ("big",), 4)
    assert (req.plan.shard_index, req.plan.num_shards, req.plan.per_label) == (1, 3, False)
    assert (req.run.concurrency, req.run.max_turns, req.run.turn_timeout_s) == (2, 7, 9.5)
    assert req.run.episode_timeout_s == 60
    assert req.app_config == {"prompt_style": "fewshot_cot"}
    assert req.role == "agent" and req.url == PURPLE and req.notes == []


def test_reference_dialect_and_legacy_keys() -> None:
    req = parse({"prompt_type": "zeroshot_cot", "complexity_level": ["level1", "level3"],
                 "num_queries": 2, "max_iterations": 10, "biggest": 4,
                 "output_dir": "x", "microservice_dir": "y", "start_index": 0})
    assert req.plan.per_label and req.plan.levels == (1, 3) and req.plan.num_queries == 2
    assert req.run.max_turns == 10
    assert req.app_config == {"prompt_style": "zeroshot_cot", "max_target": 4}
    assert "ignored file-path keys: microservice_dir, output_dir, start_index" in req.notes
    assert any("fresh" in n for n in req.notes) and isinstance(req.plan.seed, int)


def test_floats_from_data_parts_are_accepted() -> None:
    req = parse({"num_queries": 3.0, "seed": 12.0, "levels": [2.0]})
    assert (req.plan.num_queries, req.plan.seed, req.plan.levels) == (3, 12, (2,))


def test_request_as_data_part() -> None:
    data = [{"participants": {"x": PURPLE}, "config": {"num_queries": 1.0}}]
    assert load_request("", data).config == {"num_queries": 1.0}


@pytest.mark.parametrize("config, problem", [
    ({"num_querys": 3}, "unknown config keys for toy: num_querys"),
    ({"num_queries": -1}, "num_queries: Input should be greater than or equal to 1"),
    ({"levels": [4]}, "levels must be a non-empty list drawn from 1, 2, 3"),
    ({"complexity_level": ["hard"]}, "bad level 'hard'"),
    ({"max_turns": 3, "max_iterations": 4}, "max_iterations conflicts with max_turns"),
    ({"biggest": 3, "max_target": 4}, "biggest conflicts with max_target"),
    ({"prompt_type": "fancy"}, "prompt_style: Input should be"),
    ({"shard_index": 2, "num_shards": 2}, "shard_index must be < num_shards"),
    # Every record carries the seed and config: leaderboard SQL reads them as BIGINT.
    ({"seed": 2**80}, "seed: 1208925819614629174706176 does not fit in 64 bits"),
    ({"max_target": -(2**63) - 1}, "max_target: -9223372036854775809 does not fit in 64 bits"),
])
def test_bad_config_is_rejected_by_name(config: dict, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem.replace("(", r"\(")):
        parse(config)


@pytest.mark.parametrize("participants, problem", [
    ({}, "exactly one participant expected, got 0"),
    ({"a": PURPLE, "b": PURPLE}, "exactly one participant expected, got 2"),
    ({"a": "ftp://x/"}, "participant 'a' has a bad URL 'ftp://x/'"),
    ({"a": "not a url"}, "bad URL 'not a url'"),
    ({"a": "http://127.0.0.1:99999/"}, "bad URL .*[Pp]ort"),
    ({"a": "http://127.0.0.1:-1/"}, "bad URL .*[Pp]ort"),
    ({"a": "http://127.0.0.1:9/\r\nX-Injected: 1"}, "bad URL .*non-printable"),
    ({"a": "http://exa mple.com/"}, "bad URL"),
    ({"a": "http://127.0.0.1/" + "x" * 5000}, "bad URL .*longer than 2048"),
])
def test_bad_participants_are_rejected(participants: dict, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        parse({}, participants)


MALFORMED = [
    ("this is not json", "request is not JSON"),
    ({"config": {"num_queries": 1}}, "request has no participants"),
    ({"participants": {"agent": "htp:/oops"}, "config": {}}, "bad URL 'htp:/oops'"),
    ({"participants": {"agent": PURPLE}, "config": {"colour": "red"}},
     "unknown config keys for toy: colour"),
    ({"participants": {"agent": PURPLE}, "config": {"num_queries": -1}}, "num_queries"),
    ({"participants": {"agent": PURPLE}, "config": {}, "extra": 1}, "extra: Extra inputs"),
    ([1, 2], "must be a JSON object"),
]


async def test_malformed_requests_fail_with_the_reason_over_http() -> None:
    async with serving(lambda url: green_app(ToyApp, url)) as green:
        for request, problem in MALFORMED:
            events = await stream_03(green, request)
            final = events[-1]
            assert final["status"]["state"] == "rejected", request
            reason = final["status"]["message"]["parts"][0]["text"]
            assert reason.startswith("rejected: ") and problem in reason, (reason, problem)
        # the server is still up and serving good requests afterwards
        events = await stream_03(green, {"participants": {"a": PURPLE},
                                         "config": {"levels": [7]}})
        assert "levels must be" in events[-1]["status"]["message"]["parts"][0]["text"]


class CrashingApp(ToyApp):
    name = "crashy"
    labels: ClassVar = {1: ("small",)}

    def generate(self, seed: int, level: int, label: str | None = None) -> Query:
        raise RuntimeError("generator exploded")


async def test_crash_fails_the_task_and_server_stays_up() -> None:
    async with serving(lambda url: green_app(CrashingApp, url)) as green:
        request = {"participants": {"a": PURPLE}, "config": {"levels": [1]}}
        first = await evaluate(green, request)
        second = await evaluate(green, request)
    for out in (first, second):
        assert out.state == TaskState.TASK_STATE_FAILED
        assert out.statuses[-1] == "internal error: RuntimeError: generator exploded"


@pytest.mark.parametrize("key, value", [("kubeconfig", "/root/.kube/config"),
                                        ("backend", "cluster"), ("context", "prod")])
def test_operator_only_parameters_are_refused_in_requests(key: str, value: str) -> None:
    from netarena.k8s import K8sApp

    text = json.dumps({"participants": {"k8s_operator": PURPLE}, "config": {key: value}})
    with pytest.raises(ConfigError, match=f"{key} may only be set by the evaluator's operator"):
        parse_request(load_request(text), K8sApp)


async def test_the_operators_parameters_apply_under_each_request() -> None:
    from netarena.common.serving.server import GreenOptions, _Evaluation

    class Req:
        app_config: ClassVar[dict] = {"max_target": 3}

    options = GreenOptions(app_params={"max_target": 5, "fail_open": False})
    evaluation = _Evaluation(ToyApp, None, options, None)  # type: ignore[arg-type]
    assert evaluation._params(Req()) == {"max_target": 3, "fail_open": False}  # type: ignore[arg-type]


def test_the_unknown_key_hint_lists_only_what_a_request_may_set() -> None:
    from netarena.k8s import K8sApp

    text = json.dumps({"participants": {"k8s_operator": PURPLE}, "config": {"nmu_queries": 3}})
    with pytest.raises(ConfigError, match="unknown config keys for k8s: nmu_queries") as err:
        parse_request(load_request(text), K8sApp)
    accepted = str(err.value).split("accepted: ")[1]
    assert "num_queries" in accepted and "num_services" in accepted
    assert not {"kubeconfig", "backend", "context", "probe_image"} & set(
        accepted.rstrip(")").split(", "))


def test_repeated_levels_and_labels_collapse() -> None:
    """Every result record carries the effective config: a 300 KB list of repeats would
    come back once per query (1,000 queries: 300 MB)."""
    parsed = parse({"levels": [2] * 100_000 + [1], "labels": ["small"] * 50_000})
    assert parsed.plan.levels == (2, 1)
    assert parsed.plan.labels == ("small",)


def test_an_oversized_effective_config_is_refused() -> None:
    from netarena.k8s import K8sApp

    text = json.dumps({"participants": {"k8s_operator": PURPLE},
                       "config": {"namespace": "x" * 100_000}})
    too_big = r"effective config is 100\d{3} characters; at most 8192"
    with pytest.raises(ConfigError, match=too_big) as err:
        parse_request(load_request(text), K8sApp)
    assert len(str(err.value)) < 500  # the reason does not echo the request back
