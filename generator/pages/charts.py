"""Inline SVG charts drawn at build time: no library, no request.

Each function takes numbers and labels already written in the page's language and
returns SVG markup; the figure's text alternative is the caller's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from markupsafe import Markup, escape

WIDTH, HEIGHT = 640, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 120, 16, 44


def _log_scale(low: float, high: float, start: float, end: float) -> Callable[[float], float]:
    """Map values on a logarithmic axis from [low, high] to pixels [start, end]."""
    span = math.log10(high) - math.log10(low)
    return lambda value: start + (math.log10(max(value, low)) - math.log10(low)) / span * (end - start)


def _bounds(values: Sequence[float]) -> tuple[float, float]:
    """Powers of ten around the values, for a log axis with round ticks."""
    positive = [v for v in values if v > 0]
    return 10 ** math.floor(math.log10(min(positive))), 10 ** math.ceil(math.log10(max(positive)))


def _svg(chart_id: str, title: str, body: list[str], height: int = HEIGHT) -> Markup:
    head = (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" aria-labelledby="{chart_id}-title" '
        f'xmlns="http://www.w3.org/2000/svg"><title id="{chart_id}-title">{escape(title)}</title>'
    )
    return Markup(head + "".join(body) + "</svg>")


def _y_axis(scale: Callable[[float], float], low: float, high: float, label: Callable[[float], str]) -> list[str]:
    """Grid lines and labels at each power of ten on a log axis."""
    parts = []
    tick = low
    while tick <= high * 1.0001:
        y = scale(tick)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(label(tick))}</text>')
        tick *= 10
    return parts


LABEL_GAP = 13  # user units between two card labels' baselines: the 11-unit text and room between (style.css .chart text)


def _card_lines(scale: Callable[[float], float], lines: Sequence[tuple[str, float]], low: float, high: float) -> list[str]:
    """A dashed line at each card's memory, its name beside it; a name that would overlap the one above moves
    down until it does not (the line stays at its value)."""
    parts, labels, last = [], [], -math.inf
    for name, y in sorted(((name, scale(value)) for name, value in lines if low <= value <= high), key=lambda item: item[1]):
        parts.append(f'<line class="card" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        last = max(y + 4, last + LABEL_GAP)
        labels.append(f'<text class="card-label" x="{WIDTH - RIGHT + 4}" y="{last:.1f}">{escape(name)}</text>')
    return parts + labels


def grouped_bars(
    chart_id: str,
    title: str,
    groups: Sequence[tuple[str, Sequence[float]]],
    series: Sequence[str],
    lines: Sequence[tuple[str, float]],
    label: Callable[[float], str],
    colon: str = ":",
) -> Markup:
    """Bars per group (one per series) on a log axis, with horizontal lines at card sizes.

    `colon` is the page language's (French writes a narrow no-break space before it)."""
    values = [v for _, row in groups for v in row] + [v for _, v in lines]
    low, high = _bounds(values)
    scale = _log_scale(low, high, HEIGHT - BOTTOM, TOP)
    body = _y_axis(scale, low, high, label)
    slot = (WIDTH - LEFT - RIGHT) / len(groups)
    bar = slot * 0.8 / len(series)
    for index, (name, row) in enumerate(groups):
        x0 = LEFT + index * slot + slot * 0.1
        for position, value in enumerate(row):
            y = scale(value)
            body.append(
                f'<rect class="s{position + 1}" x="{x0 + position * bar:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" '
                f'height="{HEIGHT - BOTTOM - y:.1f}">'
                f"<title>{escape(name)} · {escape(series[position])}{colon} {escape(label(value))}</title></rect>"
            )
        body.append(f'<text class="tick" x="{x0 + slot * 0.4:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{escape(name)}</text>')
    body += _card_lines(scale, lines, low, high)
    legend, bottom = _legend(series, HEIGHT - 12)
    return _svg(chart_id, title, body + legend, height=round(bottom))


def _legend(series: Sequence[str], y: float, swatch: str = "s") -> tuple[list[str], float]:
    """Names in rows under the plot, each after a swatch of its colour; returns the bottom."""
    parts, x = [], 10
    for position, name in enumerate(series):
        width = 26 + 6 * len(name)
        if x + width > WIDTH and x > 10:
            x, y = 10, y + 16
        if swatch == "s":
            parts.append(f'<rect class="s{position + 1}" x="{x}" y="{y - 9}" width="10" height="10"/>')
        else:
            parts.append(f'<polyline class="l{position + 1}" points="{x},{y - 4} {x + 12},{y - 4}"/>')
        parts.append(f'<text class="tick" x="{x + 16}" y="{y}">{escape(name)}</text>')
        x += width
    return parts, y + 8


def lines_chart(
    chart_id: str,
    title: str,
    xs: Sequence[float],
    series: Sequence[tuple[str, Sequence[float]]],
    lines: Sequence[tuple[str, float]],
    x_label: Callable[[float], str],
    label: Callable[[float], str],
) -> Markup:
    """One polyline per series over log-spaced x values, with card sizes as horizontal lines."""
    values = [v for _, row in series for v in row] + [v for _, v in lines]
    low, high = _bounds(values)
    y_scale = _log_scale(low, high, HEIGHT - BOTTOM, TOP)
    x_scale = _log_scale(min(xs), max(xs), LEFT + 10, WIDTH - RIGHT - 10)
    body = _y_axis(y_scale, low, high, label)
    for x in xs:
        body.append(f'<text class="tick" x="{x_scale(x):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{escape(x_label(x))}</text>')
    body += _card_lines(y_scale, lines, low, high)
    for position, (name, row) in enumerate(series):
        points = " ".join(f"{x_scale(x):.1f},{y_scale(v):.1f}" for x, v in zip(xs, row, strict=True))
        body.append(f'<polyline class="l{position + 1}" points="{points}"><title>{escape(name)}</title></polyline>')
    legend, bottom = _legend([name for name, _ in series], HEIGHT - 12, swatch="l")
    return _svg(chart_id, title, body + legend, height=round(bottom))


def stacked_bar(chart_id: str, title: str, parts: Sequence[tuple[str, float]], label: Callable[[float], str], colon: str = ":") -> Markup:
    """One horizontal bar split into its parts, each labelled with its value (after the language's colon)."""
    total = sum(value for _, value in parts) or 1
    width = WIDTH - 20
    body, x = [], 10.0
    for position, (name, value) in enumerate(parts):
        w = value / total * width
        body.append(
            f'<rect class="s{position + 1}" x="{x:.1f}" y="10" width="{w:.1f}" height="34">'
            f"<title>{escape(name)}{colon} {escape(label(value))}</title></rect>"
        )
        x += w
    # Markup.format escapes the value and keeps a translated (already escaped) name as it is.
    legend, bottom = _legend([Markup("{}{} {}").format(name, colon, label(value)) for name, value in parts], 70)
    return _svg(chart_id, title, body + legend, height=round(bottom))
