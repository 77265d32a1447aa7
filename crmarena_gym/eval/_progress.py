"""A one-line progress bar for evaluation runs (drawn only on a terminal)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

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
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(self.stream.isatty()) if enabled is None else enabled
        self.total, self.done, self.width = total, done, width
        self._start_done = done
        self._reward = 0.0
        self._counted = 0
        self._start = time.monotonic()

    def update(self, reward: float) -> None:
        """Count one finished episode with its reward, and redraw."""
        self.done += 1
        self._counted += 1
        self._reward += reward
        if not self.enabled:
            return
        fraction = self.done / self.total if self.total else 1.0
        filled = int(self.width * fraction)
        elapsed = time.monotonic() - self._start
        rate = (self.done - self._start_done) / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        self.stream.write(
            f"\reval [{'#' * filled}{'-' * (self.width - filled)}] {self.done}/{self.total} "
            f"{rate:5.2f} ep/s  eta {left:6.0f}s  reward {self._reward / self._counted:.3f} "
        )
        self.stream.flush()

    def close(self) -> None:
        """End the line."""
        if self.enabled and self._counted:
            self.stream.write("\n")
            self.stream.flush()
