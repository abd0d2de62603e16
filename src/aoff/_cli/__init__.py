"""The ``aoff`` command's parts (``aoff.__main__`` parses the arguments).

Owns ``aoff show``/``aoff ls`` as they print a run (``_show``; the tag table
``_tagtable``, the progress bar ``_progress``; reading the run back from its files is
``_runfolder``'s), ``aoff demo`` (``_demo``: its settings ``_demo_config``, its run
``_demo_drive`` with the numbers of ``_demo_sim``, its closing lines ``_demo_outro``),
the ``aoff attach`` client (``_attach``), ``aoff compare``
(``_compare``: runs grouped by ``_groups``, their series read by ``_series``, the
statistics of ``_stats``, the terminal chart ``_comparechart``, the figure
``_comparefig``), ``aoff export`` (``_export``), the ``--json`` of ``show``/``ls``
(``_runjson``) and quiet exits into closed pipes (``_pipes``).

May import: ``_faces`` (the demo logs like a user), ``_channel`` (the socket's paths),
``_display``, ``_backends``, ``_runfolder`` (the run's files read back, through it only),
``_core``. Nothing below imports it.
"""
