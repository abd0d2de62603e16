"""The run summary ``aoff-summary.json``: its names and when it may stand for the run
(``_file``, light: ``aoff ls`` reads it), and its writer (``_writer``: the statistics
kept as records pass, and the file replaced whole); the format as the format table knows
it (``_format``: a run's file, with no points of its own).
"""

__all__: list[str] = []
