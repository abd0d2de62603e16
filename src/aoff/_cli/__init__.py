"""The ``aoff`` command's parts (``aoff.__main__`` parses the arguments).

Owns ``aoff show``/``aoff ls`` (``_show``) and reading a finished run back from its
files (``_runs``), ``aoff demo`` (``_demo``, its simulated run in ``_demo_sim``) and the
``aoff attach`` client (``_attach``).

May import: ``_faces`` (the demo logs like a user), ``_channel`` (the socket's paths),
``_display``, ``_backends``, ``_core``. Nothing below imports it.
"""
