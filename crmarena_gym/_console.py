"""Console output shared by every layer: aligned text tables and a one-line progress bar.

This module sits below the layers (it imports none of them), so that the org cache, the command line
and the evaluation runner draw the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Literal, TextIO

Align = Literal["<", ">"]


def text_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, align: Sequence[Align] | None = None, rule: bool = True
) -> str:
    """An aligned plain-text table.

    Args:
        header: The column names.
        rows: The cells, as text.
        align: Per column ``"<"`` (left, the default) or ``">"`` (right, for numbers).
        rule: Draw a line of dashes under the header.

    Example:
        >>> print(text_table(["task", "n"], [["HTU", "3"], ["KQA", "12"]], align="<>"))
        task   n
        ----  --
        HTU    3
        KQA   12
    """
    align = list(align) if align is not None else ["<"] * len(header)
    if len(align) != len(header):
        raise ValueError(f"align has {len(align)} entries for {len(header)} columns")
    widths = [len(h) for h in header]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"a row has {len(row)} cells for {len(header)} columns: {list(row)!r}")
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        parts = [c.ljust(w) if a == "<" else c.rjust(w) for c, w, a in zip(cells, widths, align, strict=True)]
        return "  ".join(parts).rstrip()

    lines = [line(header)]
    if rule:
        lines.append("  ".join("-" * w for w in widths))
    lines.extend(line(row) for row in rows)
    return "\n".join(lines)


class ProgressLine:
    """A progress bar redrawn in place on one line of a terminal.

    Args:
        label: Text before the bar.
        stream: Where to draw (default: stderr).
        enabled: Draw at all (default: only when ``stream`` is a terminal, so logs stay clean).
        width: Characters of the bar.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> bar = ProgressLine("eval", stream=out, enabled=True, width=4)
        >>> bar.draw(0.5, "2/4"); bar.close()
        >>> out.getvalue()
        '\\reval [##--] 2/4\\n'
    """

    def __init__(self, label: str, *, stream: TextIO | None = None, enabled: bool | None = None, width: int = 30):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(self.stream.isatty()) if enabled is None else enabled
        self.width = width
        self._drawn = False

    def draw(self, fraction: float, detail: str = "") -> None:
        """Redraw the bar filled to ``fraction`` (clamped to [0, 1]), followed by ``detail``."""
        if not self.enabled:
            return
        filled = int(self.width * min(max(fraction, 0.0), 1.0))
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {detail}".rstrip())
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the line (if anything was drawn)."""
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
