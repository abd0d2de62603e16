"""The faces: what training code calls, and the training process's side of the run.

Owns ``OffPolicyLogger`` (``_sync``), ``AsyncOffPolicyLogger`` (``_async``, with its
SIGTERM watcher in ``_sigterm``), what both share (``_face``: the constructor, fork and
rank rules, the stop path), what a face needs of the part that runs its pump (``_driver``:
both faces hold it as ``_driver``), the async face's in-process pump task
(``_pumptask``), ``RemoteLogger`` (``_remote``) and the producer logger it shares with
Ray's (``_producer``), resuming a run folder (``_resume``),
and process mode's training-process half: starting the agent (``_spawn``), driving the
shipper and falling back to an in-process pump when the agent is lost (``_side``),
signals held back during a round on the main thread (``_defer``); ``RunGroup``, N runs
of one program fed with one call per step (``_group``).

May import: ``_pump``, ``_channel``, ``_transport``, ``_backends``, ``_display``,
``_runfolder`` (resume's last step and cut), ``_media``, ``_core``. Never ``_agent``
(another process: it is started by name) nor ``_cli``.
"""
