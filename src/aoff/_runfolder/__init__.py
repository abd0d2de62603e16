"""The run folder: every file format a run leaves on disk, one sub-package a format.

* ``tensorboard/``: the event files (names, last step, the ``Event`` encoder, TFRecord
  framing, media and HParams, and the one event parser every reader uses);
* ``lines/``: ``metrics.jsonl`` and ``progress.csv``, one row a line, read forward, from
  the end and cut back by one line reader;
* ``summary/``: the run summary ``aoff-summary.json``, its name and when it may stand for
  the run, and its writer (statistics kept as records pass);
* ``reading/``: the format-neutral readers over them: :func:`aoff.read_scalars` and
  :class:`aoff.ScalarReader`, envelopes and axis columns, run discovery, what ``aoff
  ls/show`` print of a run, and resume's last step and cut.

Each format is one :class:`~aoff._runfolder._format.RunFormat` (``_format``: its files,
its points read back, its last step and its cut), and ``reading/_formats`` is the one
table of them that the readers, resume and run discovery iterate; the backend registry
adds a new format there.

Beside them, what several formats share: the points a reader hands over (``_tagseries``),
the spelling of a non-finite number (``_nonfinite``),
pacing for a long encoding (``_pieces``), replacing a small file whole (``_replace``),
and two small files of their own (``config.json``: ``_configfile``; media files under
``media/``: ``_mediafiles``).

Why a part of its own: the writers (``_backends``), resume (``_faces``) and the command
line (``_cli``) all need these files; each file name is spelled here once (a test reads
the code for it), and a backend is a thin adapter that keeps the open file, threads and
errors.

May import: ``_core`` only; nothing above it (the live-socket test ``aoff ls`` needs is
passed in by the command line). Inside, ``reading`` sits above ``summary``, which sits
above ``tensorboard`` and ``lines`` (independent of each other), which sit above the
shared modules (a contract in ``pyproject.toml``). NumPy only in the readers and the
summary's statistics, never with the format modules the training process reads names
from; pandas only inside the call that returns a DataFrame.
"""

__all__: list[str] = []
