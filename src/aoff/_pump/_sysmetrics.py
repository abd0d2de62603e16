"""System metrics of the training process, sampled off its training thread.

Why here and not in the recorder: a sample (``psutil`` reads ``/proc``; NVML asks the
driver) costs tens to hundreds of microseconds, far more than a logging call. So the
:class:`~aoff._pump._pump.Pump` owns one :class:`SystemSampler`, whose own daemon thread takes
a sample every ``interval`` seconds (default 1 s); the pump folds the latest one like an
event (``SYSTEM``): the dashboard's System column shows it and the next ``log_step``'s
record carries it. With the default ``pump="process"`` all of this runs in the agent
process, watching the training process by pid; with ``pump="thread"`` it runs in a
thread of the training process (never on the caller's thread).

What (one sample, every key a float):

``system/cpu_percent``
    the training process's CPU use since the previous sample, in percent of one core
    (``psutil.Process.cpu_percent``: 250 means two and a half cores busy);
``system/rss_mb``
    its resident memory, in MiB;
``system/gpu_util``, ``system/gpu_mem_mb``
    only with the optional ``nvidia-ml-py`` package (``pip install aoff[gpu]``) and an
    NVIDIA GPU: the utilisation (percent, the busiest device) and used memory (MiB,
    summed) of the devices the training process has a context on; when NVML cannot see
    that process (a container with its own pid namespace), of the devices in
    ``CUDA_VISIBLE_DEVICES`` (all devices when it is not set). Without the package, or
    without a GPU, these keys are simply absent.

The first sample is taken one ``interval`` after the start (CPU percent needs two
readings). A sampler that fails (the process is gone, ``psutil`` refuses) reports the
first error once through the pump's ``say`` and keeps trying on later ticks; it never
raises into the pump. ``psutil`` and ``pynvml`` are imported in the sampler's thread,
never by ``import aoff``.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from typing import Any

from .._core._events import SYSTEM, Event

__all__ = ["DEFAULT_INTERVAL", "SystemSampler"]

DEFAULT_INTERVAL = 1.0
_MIB = float(1 << 20)


class _Gpu:
    """NVML handles, opened once; ``None`` from :func:`_open_gpu` when there is no GPU."""

    def __init__(self, nvml: Any, handles: list[Any]) -> None:
        self.nvml = nvml
        self.handles = handles

    def sample(self, pid: int) -> dict[str, float]:
        nvml = self.nvml
        mine = []
        for h in self.handles:
            try:
                procs = nvml.nvmlDeviceGetComputeRunningProcesses(h)
            except nvml.NVMLError:
                procs = ()
            if any(p.pid == pid for p in procs):
                mine.append(h)
        devices = mine or self.handles
        util = max(float(nvml.nvmlDeviceGetUtilizationRates(h).gpu) for h in devices)
        used = sum(float(nvml.nvmlDeviceGetMemoryInfo(h).used) for h in devices)
        return {"system/gpu_util": util, "system/gpu_mem_mb": used / _MIB}


def _visible(count: int) -> list[int]:
    """Device indices in ``CUDA_VISIBLE_DEVICES`` (integers only), else all of them."""
    spec = os.environ.get("CUDA_VISIBLE_DEVICES")
    if spec is None:
        return list(range(count))
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        if not part.isdigit():
            break  # UUIDs or MIG names: the first non-index ends the list, as CUDA does
        if int(part) < count:
            out.append(int(part))
    return out


def _open_gpu() -> _Gpu | None:
    """NVML, if ``nvidia-ml-py`` is installed and a device is there; else ``None``."""
    try:
        nvml: Any = importlib.import_module("pynvml")  # the optional extra aoff[gpu]
    except ImportError:
        return None
    try:
        nvml.nvmlInit()
        count = nvml.nvmlDeviceGetCount()
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in _visible(count)]
    except Exception:  # NVMLError (no driver, no device) and anything odd: no GPU keys
        return None
    return _Gpu(nvml, handles) if handles else None


class SystemSampler:
    """Samples process ``pid`` every ``interval`` seconds in a daemon thread.

    :meth:`take` hands the newest sample over (once); :meth:`problem` the first failure's
    message (once); :meth:`fold_newest` does both for the pump, on its loop, once a tick.
    A lock guards the hand-over.
    """

    def __init__(self, pid: int, interval: float = DEFAULT_INTERVAL, *, gpu: bool = True) -> None:
        if not interval > 0:
            raise ValueError(f"system interval must be > 0, got {interval!r}")
        self.pid = pid
        self.interval = float(interval)
        self.gpu = gpu
        self.samples = 0  # taken (for tests and the benchmark)
        self._lock = threading.Lock()
        self._latest: dict[str, float] | None = None
        self._problem: str | None = None
        self._reported = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the pump's side --------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="aoff-system-sampler", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end (it does within one sample); never waits for it."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def take(self) -> dict[str, float] | None:
        """The newest sample not handed over yet, or ``None``."""
        with self._lock:
            sample, self._latest = self._latest, None
        return sample

    def problem(self) -> str | None:
        """The first failure's message, once; ``None`` otherwise."""
        with self._lock:
            if self._problem is None or self._reported:
                return None
            self._reported = True
            return self._problem

    def fold_newest(
        self,
        apply: Callable[[Event], object],
        clock: Callable[[], float],
        say: Callable[[str], None],
    ) -> bool:
        """On the pump's loop: say the first failure (once), and ``apply`` the newest sample
        as a ``SYSTEM`` event (it joins the next step's record); True if one was folded."""
        problem = self.problem()
        if problem is not None:
            say(problem)
        sample = self.take()
        if sample is None:
            return False
        apply((SYSTEM, clock(), sample))
        return True

    # -- the sampler's thread ---------------------------------------------------------------
    def _run(self) -> None:
        proc: Any = None
        gpu: _Gpu | None = None
        gpu_tried = not self.gpu
        while not self._stop.wait(self.interval if proc is not None else 0.0):
            try:
                if proc is None:
                    import psutil

                    proc = psutil.Process(self.pid)
                    proc.cpu_percent(None)  # the first reading only starts the count
                    continue
                if not gpu_tried:
                    gpu_tried = True
                    gpu = _open_gpu()
                with proc.oneshot():
                    sample = {
                        "system/cpu_percent": float(proc.cpu_percent(None)),
                        "system/rss_mb": proc.memory_info().rss / _MIB,
                    }
                if gpu is not None:
                    try:
                        sample.update(gpu.sample(self.pid))
                    except Exception as exc:
                        gpu = None  # one NVML failure turns the GPU keys off
                        self._fail(f"GPU metrics off: {type(exc).__name__}: {exc}")
            except Exception as exc:
                self._fail(f"{type(exc).__name__}: {exc}")
                # could not even attach: retry after an interval
                if proc is None and self._stop.wait(self.interval):
                    break
                continue
            with self._lock:
                self._latest = sample
                self.samples += 1

    def _fail(self, message: str) -> None:
        with self._lock:
            if self._problem is None:
                self._problem = f"aoff: system metrics of process {self.pid}: {message}"
