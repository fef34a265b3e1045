"""HTML for the status page (``GET /``) and the per-evaluation report: plain, self-contained.

The page lists running evaluations with a progress bar and the correctness so far, then
recent ones with their final state and a link to their report; it refreshes itself every
two seconds. Every value from a request is escaped, and URLs in reasons lose their user info
and query (``netarena.common.serving.status.public_text``).
"""

from __future__ import annotations

import time
from html import escape

from netarena.common.core.summary import Metrics, Rate
from netarena.common.serving.outbound import public_text
from netarena.common.serving.status import Board, Entry

__all__ = ["render_page", "render_report"]

_STYLE = """
body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}
table{border-collapse:collapse;min-width:60%}td,th{border-bottom:1px solid #ddd;
padding:.35em .8em;text-align:left}th{background:#f3f3f3}
.bar{width:220px;height:14px;background:#eee;border-radius:7px;overflow:hidden;display:inline-block;
vertical-align:middle}.fill{display:block;height:100%;background:#3a7bd5}
.completed{color:#1a7f37}.failed,.canceled,.rejected{color:#b42318}.working{color:#1f4e9c}
.muted{color:#777}
"""


def _ago(ts: float | None) -> str:
    if ts is None:
        return ""
    seconds = max(0, int(time.time() - ts))
    return f"{seconds}s ago" if seconds < 120 else f"{seconds // 60} min ago"


def _row(entry: Entry) -> str:
    done, total = entry.done, max(entry.total, 1)
    pct = 100 * done // total
    rate = f"{entry.correct / done:.2f}" if done else "–"
    link = f'<a href="/evaluations/{escape(entry.public_id)}/report">report</a>'
    reason = public_text(entry.reason)
    return (
        f"<tr><td>{escape(entry.app)}</td><td>{escape(entry.role)}<br>"
        f'<span class="muted">{escape(entry.participant)}</span></td>'
        f'<td><span class="bar"><span class="fill" style="width:{pct}%"></span></span> '
        f"query {done}/{entry.total}</td><td>correctness {rate}</td>"
        f'<td class="{escape(entry.state)}">{escape(entry.state)}'
        f'{"<br><span class=muted>" + escape(reason) + "</span>" if reason else ""}'
        f"</td><td>{_ago(entry.started)}</td><td>{link}</td></tr>"
    )


def _table(entries: list[Entry], empty: str) -> str:
    if not entries:
        return f'<p class="muted">{empty}</p>'
    head = ("<tr><th>app</th><th>participant</th><th>progress</th><th>so far</th>"
            "<th>state</th><th>started</th><th></th></tr>")
    return f"<table>{head}{''.join(_row(e) for e in entries)}</table>"


def render_page(title: str, board: Board) -> str:
    """The status page: running evaluations, then recent ones (newest first)."""
    entries = list(reversed(board.entries.values()))
    running = [e for e in entries if e.ended is None]
    recent = [e for e in entries if e.ended is not None]
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        '<meta http-equiv="refresh" content="2">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        '<p class="muted">A2A endpoint: POST / · card: '
        '<a href="/.well-known/agent-card.json">/.well-known/agent-card.json</a> · '
        '<a href="/metrics">metrics</a> · <a href="/evaluations">JSON</a></p>'
        f"<h2>Running ({len(running)})</h2>{_table(running, 'No evaluation running.')}"
        f"<h2>Recent ({len(recent)})</h2>{_table(recent, 'None yet.')}"
        "</body></html>"
    )


def _rate(stat: Rate) -> str:
    lo, hi = stat.ci95
    return "n/a" if stat.rate is None else f"{stat.rate:.3f} [{lo:.3f}, {hi:.3f}]"


def render_report(entry: Entry, *, detail: bool = False) -> str:
    """One evaluation's report: its state and, once finished, its summary by level.

    Args:
        entry: The evaluation.
        detail: Also show the per-query detail of a failure (token holders only).
    """
    summary = entry.summary
    body = f"<p>{escape(entry.state)} · query {entry.done}/{entry.total}"
    body += f" · {escape(public_text(entry.reason))}</p>" if entry.reason else "</p>"
    if detail and entry.detail:
        body += f'<p class="muted">{escape(public_text(entry.detail))}</p>'
    if summary:
        rows: list[tuple[str, Metrics]] = [("all", summary)]
        rows += [(f"level {k}", v) for k, v in summary.by_level.items()]
        rows += [(f"  {k}", v) for k, v in summary.by_label.items()]
        rows += [(f"states {k}", v) for k, v in summary.by_qualifier.items()]
        body += ("<table><tr><th>group</th><th>n</th><th>correctness [95% CI]</th>"
                 "<th>safety [95% CI]</th><th>median s</th></tr>")
        body += "".join(
            f"<tr><td>{escape(name)}</td><td>{m.queries}</td><td>{_rate(m.correctness)}"
            f"</td><td>{_rate(m.safety)}</td><td>{m.latency.median_s:.3f}</td></tr>"
            for name, m in rows)
        body += "</table>"
        body += f"<h2>Effective config</h2><pre>{escape(str(summary.config or {}))}</pre>"
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        f"<title>{escape(entry.app)} · {escape(entry.public_id)}</title><style>{_STYLE}</style>"
        f"</head><body><h1>{escape(entry.app)} · {escape(entry.role)}</h1>"
        f'<p class="muted">{escape(entry.participant)} · evaluation {escape(entry.public_id)} · '
        f'<a href="/">all evaluations</a></p>{body}</body></html>'
    )
