"""A replay's timeline as an SVG picture: each DGD's state over cluster time, with the faults marked.

One lane per DGD, coloured by its state (``initializing``, ``pending``, ``successful``, ``failed``,
``deleting``) from the moment it entered it; a red dashed line with a triangle at each fault (its
kind above it, the whole effect in the tooltip); a blue tick at each user action and world event;
a dot where an expectation held (green) or failed (red). A small hand-written SVG: no plotting
library, and the same report draws the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from xml.sax.saxutils import escape

from dgd.sim.report import Report, StateChange

COLOURS = {
    "initializing": "#b0b7c3",
    "pending": "#f2b134",
    "successful": "#3fa34d",
    "failed": "#d64545",
    "deleting": "#8e6bbf",
}
_WIDTH, _LEFT, _RIGHT, _TOP, _LANE, _GAP = 960, 200, 24, 56, 26, 10


def render_timeline(report: Report) -> str:
    """The SVG document (see the module)."""
    lanes = _lanes(report)
    end = max(report.virtual_time, 1.0)
    plot = _WIDTH - _LEFT - _RIGHT
    height = _TOP + max(len(lanes), 1) * (_LANE + _GAP) + 70
    description = report.description or "replay"
    title = escape(description if len(description) <= 110 else description[:109] + "…")
    subtitle = f"seed {report.seed}, {report.virtual_time:g}s of cluster time"

    def x(at: float) -> float:
        return _LEFT + plot * min(max(at, 0.0), end) / end

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{_WIDTH}" height="{height}" fill="white"/>',
        f'<text x="12" y="20" font-size="14" font-weight="bold">{title}</text>',
        f'<text x="12" y="38" fill="#555">{subtitle}</text>',
    ]
    # One lane per DGD: a bar per state, from when it was entered to the next change (or the end).
    for row, (name, changes) in enumerate(lanes):
        y = _TOP + row * (_LANE + _GAP)
        out.append(
            f'<text x="{_LEFT - 8}" y="{y + _LANE * 0.65:.1f}" text-anchor="end">{escape(name)}</text>'
        )
        for index, change in enumerate(changes):
            until = changes[index + 1].at if index + 1 < len(changes) else end
            if change.state == "deleted":
                continue
            width = max(x(until) - x(change.at), 0.5)
            colour = COLOURS.get(change.state, "#999999")
            tip = f"{change.state} {change.reason} from t={change.at:g}s".replace("  ", " ")
            out.append(
                f'<rect x="{x(change.at):.1f}" y="{y}" width="{width:.1f}" height="{_LANE}" fill="{colour}">'
                f"<title>{escape(tip)}</title></rect>"
            )
    bottom = _TOP + max(len(lanes), 1) * (_LANE + _GAP)
    # Steps: faults as red dashed lines, the rest as blue ticks.
    for step in report.steps:
        sx = x(step.at)
        tip = escape(f"t={step.at:g}s {step.kind} (line {step.line}): {step.effect}")
        if step.fault:
            out.append(
                f'<g><title>{tip}</title><line x1="{sx:.1f}" y1="{_TOP - 6}" x2="{sx:.1f}" y2="{bottom}" '
                f'stroke="#c0392b" stroke-dasharray="4 3"/>'
                f'<path d="M{sx - 5:.1f},{_TOP - 14} L{sx + 5:.1f},{_TOP - 14} L{sx:.1f},{_TOP - 6} Z" '
                f'fill="#c0392b"/></g>'
            )
        else:
            out.append(
                f'<g><title>{tip}</title><line x1="{sx:.1f}" y1="{bottom - 6}" x2="{sx:.1f}" '
                f'y2="{bottom + 2}" stroke="#2c6fbb" stroke-width="2"/></g>'
            )
    # Expectations: where each was decided.
    lane_of = {name: row for row, (name, _) in enumerate(lanes)}
    for result in report.expectations:
        lane = lane_of.get(result.target.split(" ", 1)[-1], len(lanes))
        y = _TOP + lane * (_LANE + _GAP) - 5
        at = (
            result.met_at
            if result.met_at is not None
            else (result.by if result.by is not None else result.at)
        )
        colour = "#1e7b34" if result.ok else "#c0392b"
        tip = escape(
            f"{'held' if result.ok else 'FAILED'} (line {result.line}): {result.name or result.check}"
        )
        out.append(f'<circle cx="{x(at):.1f}" cy="{y}" r="3.5" fill="{colour}"><title>{tip}</title></circle>')
    out += _axis(end, x, bottom)
    out += _legend(bottom + 46)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _lanes(report: Report) -> list[tuple[str, list[StateChange]]]:
    lanes: dict[str, list[StateChange]] = {}
    for change in report.timeline:
        lanes.setdefault(f"{change.namespace}/{change.name}", []).append(change)
    return sorted(lanes.items())


def _axis(end: float, x: Callable[[float], float], bottom: float) -> list[str]:
    step = _tick(end)
    minutes = end >= 1200
    out = [f'<line x1="{_LEFT}" y1="{bottom + 4}" x2="{_WIDTH - _RIGHT}" y2="{bottom + 4}" stroke="#333"/>']
    tick = 0.0
    while tick <= end + 1e-9:
        tx = x(tick)
        out.append(f'<line x1="{tx:.1f}" y1="{bottom + 4}" x2="{tx:.1f}" y2="{bottom + 9}" stroke="#333"/>')
        label = f"{tick / 60:g}m" if minutes else f"{tick:g}s"
        out.append(f'<text x="{tx:.1f}" y="{bottom + 22}" text-anchor="middle">{label}</text>')
        tick += step
    return out


def _tick(end: float) -> float:
    """A round tick interval giving about eight ticks (in minutes past 20 minutes)."""
    if end >= 1200:
        return 60 * _tick(end / 60)
    raw = end / 8
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return float(factor * magnitude)
    return float(10 * magnitude)


def _legend(y: float) -> list[str]:
    out: list[str] = []
    cursor = 12.0
    for state, colour in COLOURS.items():
        out.append(f'<rect x="{cursor:.0f}" y="{y - 10}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{cursor + 16:.0f}" y="{y}">{state}</text>')
        cursor += 26 + 6.6 * len(state)
    dashes = 'stroke="#c0392b" stroke-dasharray="4 3"'
    out.append(f'<line x1="{cursor:.0f}" y1="{y - 12}" x2="{cursor:.0f}" y2="{y + 2}" {dashes}/>')
    out.append(f'<text x="{cursor + 6:.0f}" y="{y}">fault</text>')
    cursor += 50
    blue = 'stroke="#2c6fbb" stroke-width="2"'
    out.append(f'<line x1="{cursor:.0f}" y1="{y - 10}" x2="{cursor:.0f}" y2="{y + 2}" {blue}/>')
    out.append(f'<text x="{cursor + 6:.0f}" y="{y}">user action, world event</text>')
    cursor += 170
    out.append(f'<circle cx="{cursor:.0f}" cy="{y - 4}" r="3.5" fill="#1e7b34"/>')
    out.append(f'<text x="{cursor + 8:.0f}" y="{y}">expectation held (red: failed)</text>')
    return out
