"""``python -m aoff._agent FD``: the agent process (started by the training process)."""

from __future__ import annotations

import sys

from ._serve import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
