"""The run folder: every file format a run leaves on disk, each owned by one module.

What it owns, by format: each file's name, what a record, line or row in it is (written
and read back), its last step and its cut after a step (resume):

* TensorBoard event files: ``_tfevents`` (names, last step), the ``Event`` encoder
  (``_tbevents`` for scalars and histograms, by hand; ``_tbsummaries`` for
  ``SummaryWriter``'s texts, tensors and HParams, with protobuf; ``_tbencode`` picks per
  record; images and videos as image summaries, ``_tbmedia``; the run's config as
  HParams, its own HParams file and the text table, ``_tbhparams``), the TFRecord
  framing and its appends (``_tfrecord``, its checksum ``_framing``), and one event
  parser for every reader (``_evfolder``, its bulk path ``_evfast``, on the wire
  primitives ``_tbwire`` and ``_tbvalue``), whose policy at a corrupt record is a
  parameter;
* ``metrics.jsonl``: ``_jsonlfile``; ``progress.csv``: ``_csvfile`` (both line files read
  and cut by ``_lines``, their rows handed over as ``_tagseries``);
* the run summary ``aoff-summary.json``: ``_summaryfile`` (names, when it may stand for
  the run) and ``_summarywriter`` (its statistics, kept as records pass, and its write);
* ``config.json``: ``_configfile``; media files under ``media/``: ``_mediafiles``;
  replacing a small file whole: ``_replace``.

And the readers over them: resume's last step of a folder (``_laststep``);
:func:`aoff.read_scalars` and :class:`aoff.ScalarReader` (``_scalars``); what ``aoff
ls/show`` print of a run (``_runs`` chooses the source: the summary ``_runsummary``, the
data files ``_runfiles`` with the event files through ``_tbread``, into ``_rundata``'s
shape; run folders found by ``_runfind``).

Why a part of its own: the writers (``_backends``), resume (``_faces``) and the command
line (``_cli``) all need these files; each file name is spelled here once (a test reads
the code for it), and a backend is a thin adapter that keeps the open file, threads and
errors.

May import: ``_core`` only; nothing above it (the live-socket test ``aoff ls`` needs is
passed in by the command line). NumPy only in the readers and the summary's statistics
(``_evfast`` and the parser over it, ``_tbread``, ``_scalars``, ``_summarywriter``), never
with the format modules the training process reads names from; pandas only inside the
call that returns a DataFrame.
"""

__all__: list[str] = []
