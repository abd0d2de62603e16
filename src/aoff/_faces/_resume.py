"""Resume a run at a checkpoint step (``resume_step=N``): check the run folder, cut it back.

Why at construction, in the training process: a wrong ``resume_step`` must fail at the
line that gave it, before anything is written or a helper process is started, and the
files must be cut back before any backend appends to them.

What happens (also in docs/guides/resume.md):

* the last logged step is read from the run folder: the last row of ``metrics.jsonl``
  and of ``progress.csv`` (their tails only), else the TensorBoard event files (every
  record's step, following TensorBoard's own ``SessionLog.START`` purge rule, so an
  earlier resume is taken into account). ``N`` beyond it, no run in the folder, or no
  ``log_dir`` at all is a ``ValueError`` naming what was found;
* ``metrics.jsonl`` and ``progress.csv`` lose every row with a step after ``N`` (the file
  is written again to a temporary file, ``fsync``-ed, and renamed over the old one; the
  CSV header is kept). A last line cut short by a crash is dropped too;
* the TensorBoard backend starts a new event file whose first event after the file
  version is a ``SessionLog.START`` at step ``N + 1`` (see ``_tensorboard.py``); old files
  are kept, and TensorBoard hides their points after ``N``;
* the W&B backend continues the run whose id it stored in ``log_dir/wandb-run-id``.

Reading each file's last step and cutting it are the run folder's
(``_runfolder/reading/_laststep`` over each format's module); this module checks ``N`` against
them and says what is wrong.
"""

from __future__ import annotations

import os

from .._pump._options import Options
from .._runfolder.reading._formats import labels
from .._runfolder.reading._laststep import cut_after, last_logged_step

__all__ = ["last_logged_step", "prepare_resume"]


def prepare_resume(options: Options) -> None:
    """Check ``options.resume_step`` against the run folder, then cut JSONL/CSV rows."""
    n = options.resume_step
    if n is None:
        return
    log_dir = options.log_dir
    if not log_dir:
        raise ValueError(f"resume_step={n} needs log_dir: the folder of the run to continue")
    from .._backends._wandb import RUN_ID_FILE, read_run_id

    last, used, found = last_logged_step(log_dir) if os.path.isdir(log_dir) else (None, [], [])
    has_wandb_id = os.path.isdir(log_dir) and read_run_id(log_dir) is not None
    if not found and not has_wandb_id:
        raise ValueError(
            f"resume_step={n}: there is no run to resume in {log_dir!r} (no "
            f"{labels(points=True, more=(RUN_ID_FILE,))})"
        )
    if found:
        if last is None:
            raise ValueError(
                f"resume_step={n}: the run in {log_dir!r} has not logged a step yet "
                f"(found {', '.join(found)}, with no rows)"
            )
        if n > last:
            raise ValueError(
                f"resume_step={n} is beyond the last step logged in {log_dir!r}: "
                f"{last} (read from {', '.join(used)})"
            )
        cut_after(log_dir, n)
