"""RL benchmark: held-out success of PPO against the random-candidate baseline, per task family.

Runs ``examples/train_rllib_ppo.py`` (the same code a user runs) with its arguments, so that the
figures in the README and the issue notes can be reproduced; prints the example's table (random
baseline vs trained policy on held-out instances) and its timings. Needs the ``rl`` extra.

Usage:
    python benchmarks/bench_rl.py                   # 40 iterations, about 4 minutes on 2 CPUs
    python benchmarks/bench_rl.py --iterations 80   # any argument of the example passes through
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_rllib_ppo.py"


def main() -> None:
    sys.argv = [str(EXAMPLE), *sys.argv[1:]]
    runpy.run_path(str(EXAMPLE), run_name="__main__")


if __name__ == "__main__":
    main()
