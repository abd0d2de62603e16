"""aoff's line files: ``metrics.jsonl`` (``_jsonl``) and ``progress.csv`` (``_csv``),
one row a line, both read forward, from the end and cut back by one line reader
(``_lines``), their rows handed over as tag series; both, and any other file of one row
a line, are a ``LineFormat`` of the format table (``_points``, the two in ``_formats``,
their file names in ``_names``: the table loads a codec only when its file is read).
"""

__all__: list[str] = []
