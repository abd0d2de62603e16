"""The ``aoff`` command's parts: ``show``/``ls`` (reading finished runs), ``demo`` and the
``attach`` client."""
