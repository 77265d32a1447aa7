"""A one-line progress bar for evaluation runs (drawn only on a terminal)."""

from __future__ import annotations

import time
from typing import TextIO

from crmarena_gym._console import ProgressLine

__all__ = ["ProgressBar"]


class ProgressBar:
    """Episodes done, rate, time left and the running accuracy, redrawn in place on ``stream``.

    Args:
        total: Episodes in the run (those already done when resuming included).
        done: Episodes already done.
        stream: Where to draw (default: stderr).
        enabled: Draw at all (default: when ``stream`` is a terminal).
        width: Characters of the bar.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> bar = ProgressBar(4, stream=out, enabled=True, width=4)
        >>> bar.update(1.0); bar.update(0.0); bar.close()
        >>> out.getvalue().split("\\r")[-1].split(" ")[:3]
        ['eval', '[##--]', '2/4']
    """

    def __init__(
        self, total: int, *, done: int = 0, stream: TextIO | None = None, enabled: bool | None = None, width: int = 30
    ) -> None:
        self.line = ProgressLine("eval", stream=stream, enabled=enabled, width=width)
        self.total, self.done = total, done
        self._start_done = done
        self._reward = 0.0
        self._counted = 0
        self._start = time.monotonic()

    @property
    def enabled(self) -> bool:
        """Whether the bar is drawn."""
        return self.line.enabled

    def update(self, reward: float) -> None:
        """Count one finished episode with its reward, and redraw."""
        self.done += 1
        self._counted += 1
        self._reward += reward
        if not self.line.enabled:
            return
        elapsed = time.monotonic() - self._start
        rate = (self.done - self._start_done) / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        self.line.draw(
            self.done / self.total if self.total else 1.0,
            f"{self.done}/{self.total} {rate:5.2f} ep/s  eta {left:6.0f}s  reward {self._reward / self._counted:.3f}",
        )

    def close(self) -> None:
        """End the line."""
        self.line.close()
