"""Media: ``log_image``, ``log_video`` and ``log_figure``, from the call to the encoder.

What it owns: the call's checks and its one copy (``_frames``: into a shared-memory block
in process mode, ``_shm``, named for its run and swept when stale, ``_shmnames``; a NumPy
copy in thread mode; a non-blocking pinned copy for a
CUDA tensor, ``_cuda``), the media budget and the calls themselves (``_calls``), the
encoder thread beside the pump (``_encoder``) and the encodings (``_encode``: PNG, GIF,
MP4). It sits above ``_core`` (events, records) and below ``_backends``, which use its
encodings; the faces and the pump use the rest.
"""
