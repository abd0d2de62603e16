"""Why a path given to ``aoff show``/``ls``/``attach`` is not a folder to read.

``os.path.isdir`` is False for a folder inside one the user may not enter (mode 000)
as for a path that is a file or does not exist; the message says which, so that a
permission problem reads as one.
"""

from __future__ import annotations

import os

__all__ = ["not_a_folder"]


def not_a_folder(path: str) -> str:
    """The reason ``path`` cannot be read as a folder (``os.path.isdir`` was False)."""
    try:
        os.stat(path)
    except PermissionError as exc:
        where = f" ({exc.filename!r})" if exc.filename and exc.filename != path else ""
        return f"cannot open {path!r}: permission denied{where}"
    except FileNotFoundError:
        return f"{path!r} is not a folder: it does not exist"
    except OSError as exc:
        return f"cannot open {path!r}: {exc.strerror or exc}"
    return f"{path!r} is not a folder"
