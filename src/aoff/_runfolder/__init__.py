"""The run folder: every file format a run leaves on disk, each owned by one module.

What it owns: each format's file names and its reading (``_tfevents``: TensorBoard event
files, ``_jsonlfile``: ``metrics.jsonl``, ``_csvfile``: ``progress.csv``,
``_summaryfile``: ``aoff-summary.json``, ``_configfile``: ``config.json``); the
TFRecord framing's checksum (``_framing``); the TensorBoard scalar readers (``_tbread``
for ``aoff ls/show``, ``_evfolder`` and ``_evfast`` for :func:`aoff.read_scalars`, on
the wire primitives ``_tbwire``, ``_tbvalue``, ``_tblayout``) and the public reader
(``_scalars``: :class:`aoff.ScalarReader`, :func:`aoff.read_scalars`).

Why a part of its own: the writers (``_backends``), resume (``_faces``) and the command
line (``_cli``) all need to know these files; each file name is spelled here once.

May import: ``_core`` (and ``_media``, if it must); nothing above it. pandas only inside
the call that returns a DataFrame.
"""

__all__: list[str] = []
