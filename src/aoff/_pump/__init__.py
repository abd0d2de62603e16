"""The pump: the one task that turns recorded events into output, in whichever process pumps.

Owns :class:`~aoff._pump._pump.Pump` and its parts: the intake (drain, fold in order,
hand records to the runners: ``_intake``), one runner a backend (``_runner``), the
screen (display, printed text, ``aoff attach`` viewers: ``_screen``), the end of a run's
input (``_end``), system metrics (``_sysmetrics``), the run's rules and where their
alerts go (``_alerts``, with the webhook and command on a thread of their own:
``_actions``), the logger's own cost as ``aoff/...`` tags (``_cost``), the run summary
kept fresh on a timer (``_summarykeeper``); what it is built from (``Options``: every
constructor argument, checked once: ``_options``; the named
backends, one table of name to factory: ``_registry``; which ranks log: ``_ranks``),
how its parts are wired (``Core``: ``_wiring``), and running it on a private loop in a
daemon thread (``PumpThread``: ``_thread``), and a run group's pumps on one loop with
the splitter that feeds them (``GroupPump``: ``_grouppump``). And what a process that
pumps needs: taking turns for the GIL with a training loop that shares it (``_turns``:
passed in as pacing to the fold's slicer, the backends' encoders and the dashboard, none
of which imports it), the agent's buffer of frames as they came (``_backlog``, sized
for both processes), and waiting on a pump as long as it progresses
(``_progresswatch``, shared with the faces).

May import: ``_channel``, ``_transport``, ``_backends``, ``_display``, ``_runfolder``
(the run summary, the file names), ``_media`` (the encoder beside it), ``_core``. Never
``_faces``, ``_agent`` or ``_cli`` (they stand on it).
"""
