"""TensorBoard event files: their names and last step (``_files``), the ``Event``
encoder (``_events`` by hand for scalars and histograms, ``_encode`` choosing per record
and building ``SummaryWriter``'s other summaries with protobuf), images and videos
(``_media``), the run's config as HParams and a text table (``_hparams``), the step on
another axis (``_xaxis``), the TFRecord framing and its checksum (``_tfrecord``), and one
event parser for every reader (``_evfolder``, its bulk paths ``_evfast`` and
``_evcycle``, on the wire primitives ``_wire`` and ``_value``), whose policy at a corrupt
record is a parameter; ``aoff ls/show``'s scan of a run's files over it (``_scan``); the
format as the format table knows it (``_format``).
"""

__all__: list[str] = []
