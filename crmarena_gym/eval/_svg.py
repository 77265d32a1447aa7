"""Small SVG charts written by hand (no plotting dependency): grouped bars, lines, and a scatter.

Colours are Okabe-Ito's (told apart by colour-blind readers); lines also differ by marker and dash, so
that curves lying on each other stay distinguishable. The legend sits in a margin of its own, as wide and
tall as its names need: it never covers the plot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["COLOURS", "bar_chart", "line_chart", "scatter_chart"]

#: Colour-blind-safe series colours (Okabe-Ito), black last.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
_DASHES = ("", "6 3", "2 3", "8 3 2 3")
_PLOT_W, _PLOT_H = 500, 270
_LEFT, _TOP, _BOTTOM = 60, 40, 50
_LEGEND_ROW = 16
_CHAR_W = 7  # about the width of a 12 px sans-serif character


@dataclass(frozen=True)
class _Layout:
    """Where the plot and the legend go: the legend's margin fits its longest name and every entry."""

    names: tuple[str, ...]

    @property
    def right(self) -> int:
        return 40 + _CHAR_W * min(48, max((len(n) for n in self.names), default=8))

    @property
    def width(self) -> int:
        return _LEFT + _PLOT_W + self.right

    @property
    def height(self) -> int:
        return max(_TOP + _PLOT_H + _BOTTOM, _TOP + _LEGEND_ROW * len(self.names) + 20)


def _colour(n: int) -> str:
    return COLOURS[n % len(COLOURS)]


def _marker(n: int, x: float, y: float, colour: str, title: str) -> str:
    """A marker of the n-th series' shape: circle, square, triangle, diamond."""
    tip = f"<title>{escape(title)}</title>"
    shape = n % 4
    if shape == 0:
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}">{tip}</circle>'
    if shape == 1:
        return f'<rect x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7" height="7" fill="{colour}">{tip}</rect>'
    points = (
        f"{x:.1f},{y - 5:.1f} {x + 4.5:.1f},{y + 3.5:.1f} {x - 4.5:.1f},{y + 3.5:.1f}"
        if shape == 2
        else f"{x:.1f},{y - 5:.1f} {x + 5:.1f},{y:.1f} {x:.1f},{y + 5:.1f} {x - 5:.1f},{y:.1f}"
    )
    return f'<polygon points="{points}" fill="{colour}">{tip}</polygon>'


def _frame(layout: _Layout, title: str, y_label: str, y_max: float, x_label: str = "") -> list[str]:
    width, height = layout.width, layout.height
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{_LEFT + _PLOT_W / 2}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>',
        f'<text x="14" y="{_TOP + _PLOT_H / 2}" transform="rotate(-90 14 {_TOP + _PLOT_H / 2})" '
        f'text-anchor="middle">{escape(y_label)}</text>',
    ]
    if x_label:
        parts.append(
            f'<text x="{_LEFT + _PLOT_W / 2}" y="{_TOP + _PLOT_H + 40}" text-anchor="middle">{escape(x_label)}</text>'
        )
    for i in range(5):
        value = y_max * i / 4
        y = _TOP + _PLOT_H - _PLOT_H * i / 4
        parts.append(f'<line x1="{_LEFT}" x2="{_LEFT + _PLOT_W}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_tick(value)}</text>')
    parts.append(f'<line x1="{_LEFT}" x2="{_LEFT}" y1="{_TOP}" y2="{_TOP + _PLOT_H}" stroke="#333"/>')
    parts.append(
        f'<line x1="{_LEFT}" x2="{_LEFT + _PLOT_W}" y1="{_TOP + _PLOT_H}" y2="{_TOP + _PLOT_H}" stroke="#333"/>'
    )
    return parts


def _tick(value: float) -> str:
    if value == 0:
        return "0"
    if value < 0.01:
        return f"{value:.2g}" if value < 1e-4 else f"{value:.4f}".rstrip("0")
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _legend(layout: _Layout, kind: str = "box") -> list[str]:
    """The legend in the right margin: each name beside its colour (and its marker and dash for lines)."""
    parts = []
    x0 = _LEFT + _PLOT_W + 16
    limit = (layout.right - 40) // _CHAR_W
    for n, name in enumerate(layout.names):
        y = _TOP + _LEGEND_ROW * n
        colour = _colour(n)
        if kind in ("line", "marker"):
            dash = _DASHES[n % len(_DASHES)]
            dashed = f' stroke-dasharray="{dash}"' if dash else ""
            if kind == "line":
                parts.append(
                    f'<line x1="{x0 - 4}" x2="{x0 + 14}" y1="{y + 5}" y2="{y + 5}" stroke="{colour}" '
                    f'stroke-width="2"{dashed}/>'
                )
            parts.append(_marker(n, x0 + 5, y + 5, colour, name))
        else:
            parts.append(f'<rect x="{x0}" y="{y}" width="10" height="10" fill="{colour}"/>')
        shown = name if len(name) <= limit else name[: limit - 1] + "…"
        parts.append(f'<text x="{x0 + 20}" y="{y + 9}">{escape(shown)}<title>{escape(name)}</title></text>')
    return parts


def bar_chart(
    title: str,
    groups: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    y_label: str,
    *,
    intervals: Mapping[str, Sequence[tuple[float, float] | None]] | None = None,
) -> str:
    """Grouped bars: one group per label in ``groups``, one bar per series (None: no bar), with each bar's
    interval as an error bar when ``intervals`` gives it.

    Example:
        >>> svg = bar_chart("Accuracy", ["HTU", "all"], {"run": [0.5, 1.0]}, "accuracy")
        >>> svg.startswith("<svg") and svg.count("<rect") == 4  # background, 2 bars, 1 legend swatch
        True
    """
    layout = _Layout(tuple(series))
    y_max = 1.0
    parts = _frame(layout, title, y_label, y_max)
    group_w = _PLOT_W / max(1, len(groups))
    bar_w = group_w * 0.8 / max(1, len(series))

    def y_of(value: float) -> float:
        return _TOP + _PLOT_H - _PLOT_H * min(max(value, 0.0), y_max) / y_max

    for g, label in enumerate(groups):
        x0 = _LEFT + g * group_w + group_w * 0.1
        for s, (name, values) in enumerate(series.items()):
            value = values[g]
            if value is None:
                continue
            x = x0 + s * bar_w
            top, height = y_of(value), _TOP + _PLOT_H - y_of(value)
            parts.append(
                f'<rect x="{x:.1f}" y="{top:.1f}" width="{bar_w:.1f}" height="{height:.1f}" '
                f'fill="{_colour(s)}"><title>{escape(name)}, {escape(label)}: {value:.3f}</title></rect>'
            )
            interval = (intervals or {}).get(name, [None] * len(groups))[g]
            if interval is not None:
                cx, low, high = x + bar_w / 2, y_of(interval[0]), y_of(interval[1])
                whisker = f"M{cx - 3:.1f},{high:.1f}H{cx + 3:.1f}M{cx:.1f},{high:.1f}V{low:.1f}"
                parts.append(
                    f'<path d="{whisker}M{cx - 3:.1f},{low:.1f}H{cx + 3:.1f}" stroke="#333" stroke-width="1.2" '
                    'fill="none"/>'
                )
        parts.append(
            f'<text x="{_LEFT + g * group_w + group_w / 2:.1f}" y="{_TOP + _PLOT_H + 16}" '
            f'text-anchor="middle">{escape(label)}</text>'
        )
    return "\n".join([*parts, *_legend(layout), "</svg>"])


def line_chart(title: str, xs: Sequence[int], series: Mapping[str, Sequence[float]], y_label: str, x_label: str) -> str:
    """Lines with markers over integer ``xs`` (a series may be shorter than ``xs``); each series has its
    own colour, marker and dash.

    Example:
        >>> svg = line_chart("pass^k", [1, 2], {"run": [0.8, 0.6]}, "pass^k", "k")
        >>> svg.count("<circle")  # two points and the legend's marker
        3
    """
    layout = _Layout(tuple(series))
    parts = _frame(layout, title, y_label, 1.0, x_label)
    span = max(1, len(xs) - 1)

    def x_of(i: int) -> float:
        return _LEFT + _PLOT_W * (0.05 + 0.9 * (i / span if len(xs) > 1 else 0.5))

    for i, x in enumerate(xs):
        parts.append(f'<text x="{x_of(i):.1f}" y="{_TOP + _PLOT_H + 16}" text-anchor="middle">{x}</text>')
    for s, (name, values) in enumerate(series.items()):
        colour = _colour(s)
        points = [(x_of(i), _TOP + _PLOT_H * (1 - min(max(v, 0.0), 1.0))) for i, v in enumerate(values)]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            dash = _DASHES[s % len(_DASHES)]
            dashed = f' stroke-dasharray="{dash}"' if dash else ""
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dashed}/>')
        for i, ((x, y), v) in enumerate(zip(points, values, strict=False)):
            parts.append(_marker(s, x, y, colour, f"{name}: {x_label} {xs[i]}, {v:.3f}"))
    return "\n".join([*parts, *_legend(layout, "line"), "</svg>"])


def scatter_chart(title: str, points: Mapping[str, tuple[float, float]], x_label: str, y_label: str) -> str:
    """One labelled point per series at (x, y); y in [0, 1], x from 0 to the largest x.

    Example:
        >>> svg = scatter_chart("Cost and accuracy", {"a": (0.01, 0.5), "b": (0.02, 0.7)}, "cost", "accuracy")
        >>> svg.count("<circle"), svg.count("<rect")  # a circle for a, a square for b; each in the legend too
        (2, 3)
    """
    layout = _Layout(tuple(points))
    parts = _frame(layout, title, y_label, 1.0, x_label)
    x_max = max((x for x, _ in points.values()), default=0.0) * 1.1 or 1.0
    for i in range(5):
        x = _LEFT + _PLOT_W * i / 4
        parts.append(f'<text x="{x:.1f}" y="{_TOP + _PLOT_H + 16}" text-anchor="middle">{_tick(x_max * i / 4)}</text>')
    for s, (name, (x, y)) in enumerate(points.items()):
        cx, cy = _LEFT + _PLOT_W * x / x_max, _TOP + _PLOT_H * (1 - min(max(y, 0.0), 1.0))
        parts.append(_marker(s, cx, cy, _colour(s), f"{name}: cost {x:.4g}, accuracy {y:.3f}"))
    return "\n".join([*parts, *_legend(layout, "marker"), "</svg>"])
