"""Small SVG charts written by hand (no plotting dependency): grouped bars, lines, and a scatter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

__all__ = ["bar_chart", "line_chart", "scatter_chart"]

#: Colour-blind-safe series colours (Okabe-Ito).
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
_W, _H = 720, 360
_LEFT, _RIGHT, _TOP, _BOTTOM = 60, 160, 40, 50


def _frame(title: str, y_label: str, y_max: float, x_label: str = "") -> list[str]:
    plot_h = _H - _TOP - _BOTTOM
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" '
        'font-family="sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{_W}" height="{_H}" fill="white"/>',
        f'<text x="{_W / 2}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>',
        f'<text x="14" y="{_TOP + plot_h / 2}" transform="rotate(-90 14 {_TOP + plot_h / 2})" '
        f'text-anchor="middle">{escape(y_label)}</text>',
    ]
    if x_label:
        parts.append(
            f'<text x="{_LEFT + (_W - _LEFT - _RIGHT) / 2}" y="{_H - 8}" text-anchor="middle">{escape(x_label)}</text>'
        )
    for i in range(5):
        value = y_max * i / 4
        y = _TOP + plot_h - plot_h * i / 4
        parts.append(f'<line x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_tick(value)}</text>')
    parts.append(f'<line x1="{_LEFT}" x2="{_LEFT}" y1="{_TOP}" y2="{_TOP + plot_h}" stroke="#333"/>')
    parts.append(f'<line x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{_TOP + plot_h}" y2="{_TOP + plot_h}" stroke="#333"/>')
    return parts


def _tick(value: float) -> str:
    if value == 0:
        return "0"
    if value < 0.01:
        return f"{value:.1e}"
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _legend(names: Sequence[str]) -> list[str]:
    parts = []
    for n, name in enumerate(names):
        y = _TOP + 16 * n
        parts.append(
            f'<rect x="{_W - _RIGHT + 12}" y="{y}" width="10" height="10" fill="{COLOURS[n % len(COLOURS)]}"/>'
        )
        parts.append(f'<text x="{_W - _RIGHT + 27}" y="{y + 9}">{escape(name[:22])}</text>')
    return parts


def bar_chart(title: str, groups: Sequence[str], series: Mapping[str, Sequence[float | None]], y_label: str) -> str:
    """Grouped bars: one group per label in ``groups``, one bar per series (None: no bar).

    Example:
        >>> svg = bar_chart("Accuracy", ["HTU", "all"], {"run": [0.5, 1.0]}, "accuracy")
        >>> svg.startswith("<svg") and svg.count("<rect") == 4  # background, 2 bars, 1 legend swatch
        True
    """
    y_max = 1.0
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    parts = _frame(title, y_label, y_max)
    group_w = plot_w / max(1, len(groups))
    bar_w = group_w * 0.8 / max(1, len(series))
    for g, label in enumerate(groups):
        x0 = _LEFT + g * group_w + group_w * 0.1
        for s, values in enumerate(series.values()):
            value = values[g]
            if value is None:
                continue
            h = plot_h * min(max(value, 0.0), y_max) / y_max
            x = x0 + s * bar_w
            parts.append(
                f'<rect x="{x:.1f}" y="{_TOP + plot_h - h:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                f'fill="{COLOURS[s % len(COLOURS)]}"><title>{escape(label)}: {value:.3f}</title></rect>'
            )
        parts.append(
            f'<text x="{_LEFT + g * group_w + group_w / 2:.1f}" y="{_TOP + plot_h + 16}" '
            f'text-anchor="middle">{escape(label)}</text>'
        )
    return "\n".join([*parts, *_legend(list(series)), "</svg>"])


def line_chart(title: str, xs: Sequence[int], series: Mapping[str, Sequence[float]], y_label: str, x_label: str) -> str:
    """Lines with markers over integer ``xs`` (a series may be shorter than ``xs``).

    Example:
        >>> svg = line_chart("pass^k", [1, 2], {"run": [0.8, 0.6]}, "pass^k", "k")
        >>> svg.count("<circle")
        2
    """
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    parts = _frame(title, y_label, 1.0, x_label)
    span = max(1, len(xs) - 1)

    def x_of(i: int) -> float:
        return _LEFT + plot_w * (i / span if len(xs) > 1 else 0.5)

    for i, x in enumerate(xs):
        parts.append(f'<text x="{x_of(i):.1f}" y="{_TOP + plot_h + 16}" text-anchor="middle">{x}</text>')
    for s, (name, values) in enumerate(series.items()):
        colour = COLOURS[s % len(COLOURS)]
        points = [(x_of(i), _TOP + plot_h * (1 - min(max(v, 0.0), 1.0))) for i, v in enumerate(values)]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for (x, y), v in zip(points, values, strict=False):
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}">'
                f"<title>{escape(name)}: {v:.3f}</title></circle>"
            )
    return "\n".join([*parts, *_legend(list(series)), "</svg>"])


def scatter_chart(title: str, points: Mapping[str, tuple[float, float]], x_label: str, y_label: str) -> str:
    """One labelled point per series at (x, y); y in [0, 1], x from 0 to the largest x.

    Example:
        >>> svg = scatter_chart("Cost and accuracy", {"a": (0.01, 0.5), "b": (0.02, 0.7)}, "cost", "accuracy")
        >>> svg.count("<circle")
        2
    """
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    parts = _frame(title, y_label, 1.0, x_label)
    x_max = max((x for x, _ in points.values()), default=0.0) * 1.1 or 1.0
    for i in range(5):
        x = _LEFT + plot_w * i / 4
        parts.append(f'<text x="{x:.1f}" y="{_TOP + plot_h + 16}" text-anchor="middle">{_tick(x_max * i / 4)}</text>')
    for s, (name, (x, y)) in enumerate(points.items()):
        cx, cy = _LEFT + plot_w * x / x_max, _TOP + plot_h * (1 - min(max(y, 0.0), 1.0))
        parts.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="{COLOURS[s % len(COLOURS)]}">'
            f"<title>{escape(name)}: cost {x:.4g}, accuracy {y:.3f}</title></circle>"
        )
    return "\n".join([*parts, *_legend(list(points)), "</svg>"])
