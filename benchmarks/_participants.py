"""CPU seconds of a ``read_scalars(..., workers=N)`` call's participants: the caller, and
its workers. The workers are the forkserver's children (it reaps them), so their times
are in the forkserver's children's times, read through ``psutil``; shared by
``bench_scale.py`` (their sum) and ``bench_workers_split.py`` (apart)."""

from __future__ import annotations

import resource


def participants_cpu() -> tuple[float, float]:
    """CPU seconds of this process, and of its workers (this process's ended children and
    the forkserver's, which reaps the workers)."""
    from multiprocessing import forkserver

    import psutil

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    others = kids.ru_utime + kids.ru_stime
    pid = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    if pid:  # a private attribute: there is no public way to the server
        t = psutil.Process(pid).cpu_times()
        others += t.user + t.system + t.children_user + t.children_system
    return me.ru_utime + me.ru_stime, others
