"""aoff's line files: ``metrics.jsonl`` (``_jsonl``) and ``progress.csv`` (``_csv``),
one row a line, both read forward, from the end and cut back by one line reader
(``_lines``), their rows handed over as tag series.
"""

__all__: list[str] = []
