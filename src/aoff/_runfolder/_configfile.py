"""``config.json``: the run's configuration file, by name.

Why a module of its own: the file backend (``_backends/_file.py``) writes it and the demo
names it; the name is spelled
here once.
"""

from __future__ import annotations

__all__ = ["CONFIG_NAME"]

CONFIG_NAME = "config.json"
