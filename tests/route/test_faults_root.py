"""Every fault method breaks a live network, in its steady state, and the solver repairs it."""

from __future__ import annotations

import random
import subprocess

import pytest

from netarena.common.core.errors import EmulatorError
from netarena.route import METHODS, RouteApp, sample_fault
from netarena.route.emulator.blocking import chain_rule
from netarena.route.emulator.topology import topology_of
from netarena.route.emulator.undisclosed import Undisclosed
from netarena.route.judge.checks import intended_flows

from .conftest import NEEDS_ROOT, play_reference

pytestmark = [pytest.mark.root, NEEDS_ROOT]

CASES = [(k, m, "r0") for k, ms in METHODS.items() for m in ms
         if m != "wrong_prefix"]  # a wrong length is a host's alone (faults._AIMS)
CASES += [(k, m, "host") for k in ("DI", "RI") for m in METHODS[k]]
CASES += [("DT", m, "host") for m in METHODS["DT"]]
CASES += [("DR", "forward_policy_drop", "host")]
CASES += [("WR", "unreachable_gateway", "host")]


def _faults_on(
    query, kind: str, method: str, where: str, subnet: int | None = None, count: int = 1
) -> list[dict]:
    """``count`` distinct draws of ``method`` on the wanted node (open() takes the first that
    breaks something: a draw may aim at a flow the design's own objects already decide)."""
    plan, intent, _ = topology_of(query)
    port = Undisclosed.from_dict(query.truth["undisclosed"]).tcp_port
    found: list[dict] = []
    for attempt in range(400):
        rng = random.Random(f"t/{kind}/{method}/{attempt}")
        fault = sample_fault(rng, plan, intent, kind, method, port)
        wanted = (fault["node"] == "r0") == (where == "r0") and subnet in (None, fault["subnet"])
        if wanted and fault not in found:
            found.append(fault)
            if len(found) == count:
                break
    assert found, "no candidate on the wanted node"
    return found


def _fault_on(query, kind: str, method: str, where: str, subnet: int | None = None) -> dict:
    return _faults_on(query, kind, method, where, subnet)[0]


def _broken_then_repaired_safely(episode) -> None:
    """The fault breaks a flow that must work, and the reference repairs it safely."""
    assert intended_flows(episode.want) - episode.matrix.flows
    play_reference(episode, max_turns=10)
    score = episode.score()
    assert score.correct, episode.matrix.text()
    assert score.safe and score.collateral == [], (episode.ledger, score.collateral)


def _with_faults(query, *slots: list[dict]):
    faults = [{"type": s[0]["type"], "candidates": s} for s in slots]
    return query.model_copy(update={"truth": {**query.truth, "faults": faults}})


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "method", "where"), CASES)
def test_method_breaks_and_is_repaired(kind: str, method: str, where: str) -> None:
    app = RouteApp({"num_subnets": 3, "hosts_per_subnet": 2})
    queries = (q for q in (app.generate(seed, 1, kind) for seed in range(1, 60))
               if method != "forward_policy_drop" or not q.truth["intent"]["forward_deny"])
    for _, query in zip(range(3), queries, strict=False):  # a design may leave it nothing
        candidates = _faults_on(query, kind, method, where, count=8)  # to break: the next
        try:
            episode = app.open(_with_faults(query, candidates))
            break
        except EmulatorError as error:
            assert "no combination of fault candidates" in str(error)
    else:
        raise AssertionError(f"{method} broke nothing in three designs")
    with episode:
        assert len(episode.faults) == 1 and episode.faults[0] in candidates
        assert episode.faults[0]["method"] == method
        broken = intended_flows(episode.want) - episode.matrix.flows
        assert broken, "the injection must break connectivity"
        if method in ("tcp_service_drop", "udp_reject"):  # protocol-specific: pings pass
            assert episode.matrix.ok == episode.want and {f[0] for f in broken} == {method[:3]}
        turns = play_reference(episode, max_turns=10)
        score = episode.score()
        assert score.correct, episode.matrix.text()
        assert score.safe and score.collateral == [], (episode.ledger, score.collateral)
        assert turns <= 4


def test_dud_candidate_is_resampled(small_app: RouteApp) -> None:
    """A candidate that cannot be applied or changes nothing is skipped, deterministically."""
    query = small_app.generate(2, 1, "DR")
    good = _fault_on(query, "DR", "ip_forward_off", "r0")
    missing = {**good, "method": "mtu_too_small", "intf": "r0-eth9", "mtu": 68}  # no such one
    harmless = {**good, "method": "mtu_too_small", "intf": "lo", "mtu": 68}  # probes skip lo
    with small_app.open(_with_faults(query, [missing, harmless, good])) as episode:
        assert episode.attempts == [3] and episode.faults == [good]
        assert episode.score().details["injection_attempts"] == "3"


@pytest.mark.slow
@pytest.mark.parametrize("one_source", [True, False], ids=["from-one-subnet", "from-all"])
def test_a_wrong_route_in_a_policy_table_is_repaired(one_source: bool) -> None:
    """The reference follows the policy rules to the table that decides a flow."""
    app = RouteApp({"num_subnets": 3, "hosts_per_subnet": 2})
    query = app.generate(1, 1, "WR")
    plan, intent, _ = topology_of(query)
    port = Undisclosed.from_dict(query.truth["undisclosed"]).tcp_port
    candidates: list[dict] = []
    for attempt in range(4000):
        fault = sample_fault(random.Random(f"t/policy/{attempt}"), plan, intent, "WR", None, port)
        if fault.get("table") and bool(fault.get("from")) == one_source:
            candidates.append(fault)
            if len(candidates) == 8:
                break
    with app.open(_with_faults(query, candidates)) as episode:
        assert "table" in episode.faults[0]
        _broken_then_repaired_safely(episode)


@pytest.mark.slow
@pytest.mark.parametrize("rate", ["100mbit", "1000mbit"])
def test_a_shaper_whose_burst_is_smaller_than_a_frame_breaks_and_is_repaired(rate: str) -> None:
    """A token bucket given a burst in bytes passes no frame (``tc`` shows it as 0-37b); the
    reference reads the burst, not only empty FIFOs."""
    app = RouteApp({"num_subnets": 3, "hosts_per_subnet": 2})
    query = app.generate(3, 1, "DT")
    queue = f"tbf rate {rate} burst 40 latency 50ms"
    candidates = [{**fault, "queue": queue}
                  for fault in _faults_on(query, "DT", "tc_zero_queue", "host", count=8)]
    with app.open(_with_faults(query, candidates)) as episode:
        node = episode.faults[0]["node"]
        shown = episode.net.exec(node, ["tc", "qdisc", "show", "dev", episode.faults[0]["intf"]])
        assert "tbf" in shown.output and " burst " in shown.output
        _broken_then_repaired_safely(episode)


@pytest.mark.slow
def test_a_host_given_another_subnets_gateway_address_is_repaired() -> None:
    """A host's duplicate address may be another subnet's gateway (as the design's hosts hold
    one harmlessly): its own address is gone, and the reference puts it back."""
    app = RouteApp({"num_subnets": 3, "hosts_per_subnet": 2})
    query = app.generate(5, 1, "RI")
    plan, _, _ = topology_of(query)
    candidates = []
    for fault in _faults_on(query, "RI", "duplicate_ip", "host", count=8):
        gateways = [s.gateway for s in plan.subnets[1:] if s.index != fault["subnet"]]
        candidates.append({**fault, "value": gateways[0]})
    with app.open(_with_faults(query, candidates)) as episode:
        _broken_then_repaired_safely(episode)


def test_a_drawn_rule_goes_below_a_stateful_chains_shortcut() -> None:
    """A rule drawn into a chain's top (as faults' and the design's blocks are) lands below
    the chain's ESTABLISHED accept, where the design's own blocks sit; in a chain without
    one, at the top; appended, at the end (real iptables in a fresh namespace)."""
    stateful = ("iptables -A INPUT -i lo -j ACCEPT; iptables -A INPUT -m conntrack "
                "--ctstate RELATED,ESTABLISHED -j ACCEPT; iptables -A INPUT -s 10.0.0.0/8 "
                "-j ACCEPT; iptables -A INPUT -j DROP")
    rule = {"chain": "INPUT", "match": ["-s", "192.0.2.0/24"], "verdict": ["DROP"],
            "comment": None}

    def index_after(setup: str, at: float | None) -> int:
        script = f"{setup}; {chain_rule({**rule, 'at': at})}; iptables -S INPUT"
        shown = subprocess.run(["unshare", "--net", "bash", "-c", script], check=True,
                               capture_output=True, text=True).stdout
        rules = [line for line in shown.splitlines() if line.startswith("-A ")]
        return next(i for i, line in enumerate(rules) if "192.0.2.0/24" in line)

    assert index_after(stateful, 0.0) == 2  # below lo and ESTABLISHED
    assert index_after(stateful, 0.999) == 3  # above the chain's last rule
    assert index_after(stateful, None) == 4  # appended
    assert index_after("true", 0.5) == 0
