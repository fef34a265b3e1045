"""Shared fixtures and the rules for root-only, slow, serial and parallel tests.

The suite runs in parallel with pytest-xdist (``scripts/test.sh`` passes ``-n``; docs/tests.md
says why and how much): tests are dealt to workers one by one (``--dist loadgroup``), except that

* the tests of a module with a module-scoped fixture (a shared network, a Ray cluster, an
  embedded API server) go to one worker, so the fixture is built once, not once per worker;
* a test marked ``serial`` (it measures wall time) runs while no other worker runs a test.

Plain ``pytest`` (no ``-n``) runs everything in one process, as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from netarena.common.core.collector import tune_collector

# Each worker collects cycles as the `netarena` command does (it plays the same episodes).
tune_collector()

# Shape rungs (baseline:shape) train the audit's shape model on this many instances, not 120:
# enough to run the rung for real, and a few minutes of the root tier instead of 15.
os.environ.setdefault("NETARENA_SHAPE_QUERIES", "24")

# Tests that took 5 s or more in the fast tier (pytest --durations on this 2-core machine, load
# 30-50, 2026-11-25; every parametrization of each): the `slow` tier, so that
# `bash scripts/test.sh` stays within minutes. `bash scripts/test.sh --all` runs them.
MEASURED_SLOW = (
    "tests/a2a/test_limits.py::test_authenticated_requesters_get_the_trusted_limits",
    "tests/a2a/test_limits.py::test_disconnect_cancels_the_evaluation",
    "tests/a2a/test_limits.py::test_sigterm_ends_running_evaluations_and_exits_cleanly",
    "tests/a2a/test_limits.py::test_slow_headers_and_bodies_are_cut_off",
    "tests/a2a/test_limits.py::test_task_store_stays_bounded_after_1000_junk_requests",
    "tests/a2a/test_purple_replies.py::test_compressed_replies_are_capped_after_decompression",
    "tests/a2a_llm/test_model_env.py::test_netarena_run_reaches_a_local_model_at_model_api_base",
    "tests/common/test_run_errors.py::test_half_erring_warns_and_fewer_say_nothing",
    "tests/common/test_sandbox.py::test_preloaded_state_and_allowed_imports",
    "tests/common/test_sandbox.py::test_shared_pools_are_bounded_and_never_closed_under_a_holder",
    "tests/common/test_verify.py::test_a_plan_the_reference_solves_is_scored",
    "tests/containers/test_images.py::test_healthcheck_finds_the_server_on_any_port",
    "tests/gym/test_env.py::test_gymnasium_env_checker_passes",
    "tests/gym/test_env.py::test_random_text_scores_the_same_through_gymnasium_and_the_runner",
    "tests/gym/test_env.py::test_reference_solver_scores_the_same_through_gymnasium_and_netarena_run",
    "tests/gym/test_env.py::test_reset_is_seeded_and_can_name_the_query",
    "tests/k8s/test_cluster.py::test_faulted_policies_carry_no_write_history",
    "tests/k8s/test_generator.py::test_each_label_injects_its_fault_types_and_breaks_connectivity",
    "tests/k8s/test_generator.py::test_fault_methods_vary_with_the_seed",
    "tests/k8s/test_generator.py::test_same_seed_same_query_and_different_seeds_differ",
    "tests/k8s/test_generator.py::test_synthetic_application_queries",
    "tests/malt/test_cli.py::test_export_sft_writes_chat_records",
    "tests/malt/test_cli.py::test_null_agent_scores_about_zero",
    "tests/malt/test_generation.py::test_every_operation_and_answer_type_is_covered",
    "tests/malt/test_generation.py::test_if_queries_take_both_branches",
    "tests/malt/test_generation.py::test_selections_are_never_empty",
    "tests/malt/test_generation.py::test_the_prompt_states_exactly_the_operations_of_the_truth",
    "tests/malt/test_ladder.py::test_every_malt_baseline_runs_from_the_cli",
    "tests/malt/test_qualifiers.py::test_every_label_states_its_qualifiers_often_enough",
    "tests/malt/test_qualifiers.py::test_every_stated_qualifier_is_load_bearing",
    "tests/malt/test_qualifiers.py::test_on_googles_uniform_example_idle_qualifiers_are_dropped_not_stated",
    "tests/malt/test_validity.py::test_each_strategy_fails_exactly_where_its_mistake_matters",
    "tests/malt/test_validity.py::test_no_constant_is_right_more_than_a_tenth_of_the_time",
    "tests/malt/test_validity.py::test_on_googles_example_name_order_and_constants_do_win",
    "tests/report/test_agentbeats.py::test_report_cli_on_a_leaderboard_folder_has_no_traceback",
    "tests/report/test_leaderboard.py::test_one_row_per_configuration_in_the_apps_preload",
    "tests/report/test_report.py::test_cli_report_and_agentbeats",
    "tests/report/test_report.py::test_report_of_merged_apps",
    "tests/report/test_report.py::test_writes_every_file",
    "tests/security/test_malt_sandbox.py::test_escape_attempts_are_refused",
    "tests/test_answer_formats.py::test_every_prompt_states_its_answer_format",
    "tests/test_baselines.py::test_baseline_is_deterministic_and_within_its_range",
    "tests/training/test_adaptive.py::test_the_cli_reports_the_adaptive_set_apart_and_replays_it_without_the_source",
    "tests/training/test_replay.py::test_a_replay_with_the_server_stopped_gives_identical_results",
    "tests/training/test_rollouts.py::test_a_rollout_file_loads_with_datasets",
    "tests/training/test_rollouts.py::test_the_grpo_recipe_dataset_and_environment_reward",
)


# Tests that took minutes in a fresh-clone CI run (--durations, 2026-11-28): started first.
LONGEST = (
    "tests/test_baselines.py::test_baseline_is_deterministic_and_within_its_range[k8s-shape]",
    "tests/test_baselines.py::test_baseline_is_deterministic_and_within_its_range[route-shape]",
    "tests/test_baselines.py::test_baseline_is_deterministic_and_within_its_range",
    "tests/k8s/test_instances.py::",
    "tests/k8s/test_no_tells.py::",
    "tests/training/test_rollouts.py::",
    "tests/training/test_adaptive.py::",
)


def _longest_rank(nodeid: str) -> int:
    """Where a test stands in ``LONGEST`` (past its end when it is not there)."""
    return next((i for i, prefix in enumerate(LONGEST) if nodeid.startswith(prefix)),
                len(LONGEST))


def _spread(items: list[pytest.Item], waits: Callable[[pytest.Item], bool]) -> dict[str, float]:
    """Each test's place, as a fraction, within its kind (``waits`` or not).

    Sorting by it interleaves the two kinds in proportion, each in its collection order.
    """
    kinds: tuple[list[pytest.Item], list[pytest.Item]] = ([], [])
    for item in items:
        kinds[waits(item)].append(item)
    return {item.nodeid: i / len(kind) for kind in kinds for i, item in enumerate(kind)}


def _measured_slow(nodeid: str) -> bool:
    name = nodeid.split("[", 1)[0]
    return name in MEASURED_SLOW


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With ``NETARENA_SERIAL_ONLY=1`` (``scripts/test.sh``'s serial run), leave out the test
    modules that never mention ``serial``: collecting every module took that single process
    6 s for its 30 tests, with the second core idle."""
    if (os.environ.get("NETARENA_SERIAL_ONLY") == "1" and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_")):
        return "serial" not in collection_path.read_text(encoding="utf-8")
    return None


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope == "module" for defs in info.name2fixturedefs.values() for d in defs)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the measured slow tests ``slow``; keep a module's shared fixture on one worker;
    put serial tests first; skip tests marked ``root`` when not root."""
    for item in items:
        if _measured_slow(item.nodeid):
            item.add_marker(pytest.mark.slow)
        if _shares_a_module_fixture(item) and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    # Serial tests first: later, each one waits for every running test to end (a k8s
    # baseline runs for minutes) while the other workers idle. Then the longest, so the
    # short ones fill the workers around them instead of the run ending on one of them.
    # Within each rank, the root tests (network emulators: mostly waiting on protocol
    # timers and probe windows) spread evenly among the others (mostly computing), so the
    # cores stay busy throughout instead of idling through a tail of root tests
    # (scripts/test.sh keeps this order: --no-loadscope-reorder).
    spread = _spread(items, lambda item: "root" in item.keywords)
    items.sort(key=lambda item: (item.get_closest_marker("serial") is None,
                                 _longest_rank(item.nodeid), spread[item.nodeid]))
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root to create network namespaces (CI runs as root)")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)


def _lock_dir() -> Path | None:
    """Where the workers of this xdist run keep their locks (``None`` outside xdist)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    return Path(tempfile.gettempdir()) / f"netarena-pytest-{run}" if run else None


@contextlib.contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Under xdist, run a ``serial`` test while no other test runs, and others beside each other.

    Every test holds a shared lock, a serial one the exclusive lock. A gate taken before
    either keeps new tests from slipping in while a serial test waits for the running ones to
    end. Outermost (``tryfirst``), so the waiting is not counted by ``pytest-timeout``.
    """
    folder = _lock_dir()
    if folder is None:
        yield
        return
    folder.mkdir(exist_ok=True)
    serial = item.get_closest_marker("serial") is not None
    with _flock(folder / "gate", fcntl.LOCK_EX):
        held = contextlib.ExitStack()
        held.enter_context(_flock(folder / "tests", fcntl.LOCK_EX if serial else fcntl.LOCK_SH))
    with held:
        yield
