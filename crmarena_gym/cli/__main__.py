"""``python -m crmarena_gym.cli``: the ``crmarena-gym`` command without its installed script."""

from __future__ import annotations

import sys

from crmarena_gym.cli._main import main

sys.exit(main())
