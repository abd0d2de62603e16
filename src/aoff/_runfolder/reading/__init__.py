"""The format-neutral readers over the run folder's formats, through the format table
(``_formats``).

:func:`aoff.read_scalars` and :class:`aoff.ScalarReader` (``_scalars``), with envelopes
(``_envelopes``) and axis columns (``_axiscols``); run folders found (``_runfind``);
what ``aoff ls/show`` print of a run (``_runs`` chooses the source: the summary
``_runsummary``, the data files ``_runfiles``, into ``_rundata``'s shape); resume's last
step of a folder and its cut (``_laststep``), and a cut per
tag, each tag after its own step, for a folder that holds several step axes (``_tagcut``:
Tianshou's resume); many runs: the ``--where`` language
(``_where``), the run index that answers it (``_runindex``, a run's config read back by
``_runconfig``), reading runs in worker processes (``_scalarpool``).
"""

__all__: list[str] = []
