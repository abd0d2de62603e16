"""``aoff attach`` lays the panel out as the training terminal does.

The dashboard keeps its column widths from frame to frame while the numbers fit (so the
panel does not jitter); a viewer that attaches later starts with none, and drew the
metrics column one character wider than the run's own terminal. The run now sends its
dashboard's kept widths with each snapshot, and the viewer adopts them. The frames here
are a real run's (the demo's calls through ``OffPolicyLogger``), drawn by the real
dashboard code at one size."""

from __future__ import annotations

import io
import pickle
import time

from rich.console import Console

from aoff import OffPolicyLogger, RunView
from aoff._cli._demo import add_arguments, config_from_args
from aoff._cli._demo_drive import _Calls
from aoff._display._chart import PanelMemory
from aoff._display._glyphs import UNICODE_GLYPHS
from aoff._display._panel import dashboard_panel
from aoff.testing import RecordingDisplay


def _frames() -> list[tuple[float, RunView]]:
    import argparse

    p = argparse.ArgumentParser()
    add_arguments(p)
    cfg = config_from_args(p.parse_args(["--iterations", "150", "--iter-ms", "4"]))
    shown = RecordingDisplay()
    kwargs = cfg.logger_kwargs()
    kwargs.update(display=shown, pump="thread", refresh_per_second=20, log_backend="none")
    kwargs.pop("log_dir", None)
    calls = _Calls(cfg)
    with OffPolicyLogger(**kwargs) as log:
        for part in (calls.warmup(log), calls.training(log)):
            for fn, args in part:
                if fn is None:
                    time.sleep(args[0] / 1000.0)
                else:
                    fn(*args)
        log.finish()
    return shown.frames


def _text(state: RunView, now: float, memory: PanelMemory) -> str:
    console = Console(file=io.StringIO(), width=100, height=30, color_system=None, record=True)
    console.print(dashboard_panel(state, now, UNICODE_GLYPHS, memory))
    return console.export_text()


def test_a_viewer_with_the_runs_widths_draws_the_runs_panel() -> None:
    frames = _frames()
    assert len(frames) >= 10
    run = PanelMemory()  # the training terminal's dashboard, every frame
    differ_alone = 0
    for k, (now, state) in enumerate(frames):
        drawn = _text(state, now, run)
        viewer = PanelMemory()  # a viewer attaching now
        viewer.adopt(pickle.loads(pickle.dumps(run.widths)))  # as the snapshot carries them
        assert _text(state, now, viewer) == drawn, k
        differ_alone += _text(state, now, PanelMemory()) != drawn
    assert differ_alone > 0  # without them, the layout is not the run's
