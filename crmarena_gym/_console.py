"""Console output shared by every layer: aligned text tables, progress bars (``tqdm``) and the near miss an error
names for a misspelt name.

This module sits below the layers (it imports none of them), so that the org cache, the command line
and the evaluation runner draw the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, TextIO

if TYPE_CHECKING:
    from tqdm import tqdm

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


def did_you_mean(word: str, choices: Sequence[str], *, show: Callable[[str], str] = str) -> str:
    """`` (did you mean 'X'?)`` for the choice closest to a misspelt ``word`` (difflib's), ``show``-n as the error
    should name it; nothing when none is close.

    Example:
        >>> did_you_mean("scriptd", ["scripted", "litellm"]), did_you_mean("zzz", ["scripted"])
        (" (did you mean 'scripted'?)", '')
    """
    import difflib  # only an error pays for it

    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {show(close[0])!r}?)" if close else ""


def interactive(stream: TextIO | None = None) -> bool:
    """Whether ``stream`` (default: stderr) is watched by a person: a terminal, or a Jupyter kernel's output.

    Example:
        >>> import io
        >>> interactive(io.StringIO())
        False
    """
    stream = stream if stream is not None else sys.stderr
    if stream is None:
        return False
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):  # a closed or file-like stream without isatty
        return False
    return "ipykernel" in sys.modules and stream in (sys.stderr, sys.stdout)


def progress_bar(
    total: float,
    label: str,
    *,
    stream: TextIO | None = None,
    enabled: bool = True,
    initial: float = 0,
    unit: str = "it",
) -> tqdm:
    """A ``tqdm`` progress bar: in place on a terminal, a widget in a notebook, periodic lines when piped.

    ``tqdm.auto`` picks the notebook widget when it runs in Jupyter. When ``stream`` is not a terminal (a log
    file, a pipe), the bar is redrawn at most every few seconds so that logs stay short.

    Args:
        total: The count that means done.
        label: Text before the bar.
        stream: Where to draw (default: stderr).
        enabled: Draw at all (``False``: a bar that draws nothing, so callers need not test).
        initial: The count already done (a resumed run).
        unit: The unit shown with rates.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> bar = progress_bar(4, "eval", stream=out, unit="ep")
        >>> bar.update(4); bar.close()
        >>> last = out.getvalue().splitlines()[-1]  # piped: one line per update
        >>> last.startswith("eval: 100%"), "4/4" in last
        (True, True)
    """
    if "IPython" in sys.modules:  # tqdm.auto: the notebook widget in Jupyter
        from tqdm.auto import tqdm
    else:  # what tqdm.auto picks outside IPython, without its asyncio subclass (asyncio's import: ~25 ms)
        from tqdm.std import tqdm

    stream = stream if stream is not None else sys.stderr
    watched = interactive(stream)
    columns = _columns(stream) if watched else 0
    return tqdm(
        total=total,
        desc=label,
        # A log or a pipe gets one line per update, not one line of carriage-return-separated updates.
        file=stream if watched else _Lines(stream),
        disable=not enabled,
        initial=initial,
        unit=unit,
        # A terminal that reports no width (0 columns: some CI consoles) would get no bar at all.
        dynamic_ncols=watched and columns > 0,
        ncols=None if columns > 0 else 100,
        mininterval=0.1 if watched else 5.0,
        leave=True,
    )


def _columns(stream: TextIO) -> int:
    """The width of the terminal behind ``stream`` (0 when it reports none)."""
    import os

    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


class _Lines:
    """A stream for ``tqdm`` that turns its in-place redraws into whole lines."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        line = text.replace("\r", "").rstrip()
        if line:
            self._stream.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        self._stream.flush()
