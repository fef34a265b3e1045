"""One turn of the BGP reference on one router: look, repair what differs, restart what is down.

A turn is one shell command on one router, so the reference does there in one command what
an operator with the runbook at hand does at that router's console: it shows the state
(``BGP_DIAGNOSTIC``, what the next turns' choice of router rests on), compares the
``router bgp`` section with the design and applies the difference (the same difference
``bgp_solver.bgp_router_fix`` computes from a look: neighbours the design does not name
removed, extra lines on designed neighbours and extra ``network`` statements removed,
missing lines added, remote AS first), then clears the designed sessions that are not
Established, only those (a prefix limit's shutdown lasts until then, and FRR backs off
longer after each failed attempt). Nothing else is touched: global prefix lists,
route-maps and static routes stay. The comparison runs on the router (awk over ``show
running-config bgpd``), so the command is the same whatever the state, and doing it again
changes nothing.
"""

from __future__ import annotations

import shlex

from netarena.route.frr.bgp_plan import Neighbor, bgp_lines

__all__ = ["BGP_DIAGNOSTIC", "VISIT_MARK", "visit_command"]

BGP_DIAGNOSTIC = "vtysh -c 'show bgp summary' -c 'show running-config bgpd' -c 'show ip bgp'"
"""How the reference looks at a router (the history keeps 3000 characters of a command's
output: the summary and bgpd's configuration fit, the table may be cut)."""

VISIT_MARK = "# bgp reconcile"
"""Ends every visit command: how the reference finds its own visits in the history."""

_DIFF = " ".join(
    (  # one line: the history shows a command on one line
        'BEGIN { n = split(want, W, "|"); for (i = 1; i <= n; i++) wanted[W[i]] = 1;',
        'm = split(ours, O, " "); for (i = 1; i <= m; i++) designed[O[i]] = 1 }',
        "/^router bgp / { inside = 1; next }",
        "inside && /^[^ ]/ { inside = 0 }",
        "inside { got[$0] = 1; line[++k] = $0 }",
        'function add(x) { out = out x "\\n"; changed = 1 }',
        'END { for (i = 1; i <= k; i++) { l = line[i]; split(l, f, " ");',
        "if (l ~ /^ neighbor / && !(l in wanted)) {",
        'if (f[3] == "remote-as") { if (!(f[2] in designed)) add("no neighbor " f[2]) }',
        'else if (f[2] in designed) add("no " substr(l, 2)) } }',
        "for (i = 1; i <= n; i++) if (W[i] ~ /^ neighbor / && !(W[i] in got))",
        "add(substr(W[i], 2));",
        'out = out "address-family ipv4 unicast\\n";',
        'for (i = 1; i <= k; i++) { l = line[i]; split(l, f, " ");',
        "if (l ~ /^  (neighbor|network) / && !(l in wanted)",
        '&& (f[1] == "network" || f[2] in designed)) add("no " substr(l, 3)) }',
        "for (i = 1; i <= n; i++) if (W[i] ~ /^  (neighbor|network) / && !(W[i] in got))",
        "add(substr(W[i], 3));",
        'if (changed) printf "configure terminal\\nrouter bgp %s\\n%s", asn, out;',
        'if (changed) printf "exit-address-family\\nend\\n" }',
    )
)
"""The repair, computed on the router: ``router bgp`` lines in, vtysh configuration out
(nothing when the section already matches the design)."""


def visit_command(asn: int, router_id: str, neighbors: list[Neighbor], networks: list[str]) -> str:
    """The command that looks at a router, repairs its BGP section and restarts what is down.

    Args:
        asn: The router's AS, as the design gives it.
        router_id: Its router id.
        neighbors: Its neighbour statements, as the design gives them.
        networks: The prefixes it announces.

    Returns:
        One ``bash`` command, ending with ``VISIT_MARK``.
    """
    want = bgp_lines(asn, router_id, neighbors, networks)
    section = [x for x in want if x.startswith((" neighbor ", "  neighbor ", "  network "))]
    ours = " ".join(n.address for n in neighbors)
    diff = (
        f"vtysh -c 'show running-config bgpd' | awk -v asn={asn} -v ours={shlex.quote(ours)} "
        f"-v want={shlex.quote('|'.join(section))} {shlex.quote(_DIFF)}"
    )
    clear = (
        f'for a in {ours}; do vtysh -c "show bgp neighbors $a" '
        "| grep -q 'BGP state = Established' || vtysh -c \"clear bgp $a\"; done"
    )
    repair = f'fix=$({diff}); [ -z "$fix" ] || vtysh <<< "$fix" > /dev/null'
    return f"{BGP_DIAGNOSTIC}; {repair}; {clear} {VISIT_MARK}"
