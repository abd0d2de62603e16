"""The format-neutral readers over the run folder's formats, through the format table
(``_formats``).

:func:`aoff.read_scalars` and :class:`aoff.ScalarReader` (``_scalars``), with envelopes
(``_envelopes``) and axis columns (``_axiscols``); run folders found (``_runfind``);
what ``aoff ls/show`` print of a run (``_runs`` chooses the source: the summary
``_runsummary``, the data files ``_runfiles``, into ``_rundata``'s shape); resume's last
step of a folder and its cut (``_laststep``).
"""

__all__: list[str] = []
