"""``aoff.ray``: collectors on another node of a Ray cluster log into the run (issue #24).

One real two-node cluster on this machine for every case (``ray.cluster_utils``: a head,
where the learner and the hub run, and a second node with the ``far`` resource, where
every collector actor is pinned; one more node is added, then removed). Two collector
actors outlive the first case and are linked again, under new names, to each later
case's run: an actor is a process to start (~1-2 s of CPU each here), and a process
that logged to one run and then to another is a collector's life under Tune's reused
actors too. What is proven:
every step of every actor reaches the run's files (JSONL and TensorBoard, each read
back with its own reader), each actor's in order; an actor killed mid-run, or a node
removed, leaves the run going and is named, with what it had delivered; a learner whose
hub is gone, or a hub that never answers, never holds a collector past its bound, and
every event it could not deliver is counted; a far actor's images and videos reach the
run's encoder (TensorBoard's reader), bounded by its media budget.
Skipped when Ray is not installed (the ``aoff[ray]`` extra).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import aoff
from aoff import OffPolicyLogger, RemoteReport, rules
from aoff.testing import wait_until
from aoff.testing._remote_probe import probe_remote
from tests.conftest import read_jsonl, read_tensorboard

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.cluster

STEPS = 1000


def test_import_aoff_does_not_import_ray() -> None:
    code = "import sys, aoff; print('ray' in sys.modules, callable(aoff.ray.serve))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


@contextlib.contextmanager
def two_nodes() -> Iterator[Any]:
    """A head (the learner, the hub) and a second node with the ``far`` resource."""
    from ray.cluster_utils import Cluster

    # the workers the cluster starts must import aoff and this module, as this process does
    src = str(Path(aoff.__file__).resolve().parent.parent)
    root = str(Path(__file__).resolve().parent.parent)
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, root, before) if p)
    # Ray's node installs its own SIGINT/SIGTERM handlers in this process and leaves
    # them: a later test of aoff's signal handling in the same worker would meet them
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    # no dashboard, no autoscaler monitor, no log monitors (log_to_driver=False): nothing
    # here reads them, and each is one more Python process to start (~1 s of CPU here)
    quiet = {"include_log_monitor": False}
    c = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False, "no_monitor": True, **quiet},
    )
    try:
        c.add_node(num_cpus=1, resources={"far": 3}, **quiet)
        ray.init(address=c.address, logging_level="warning", log_to_driver=False)
        yield c
    finally:
        ray.shutdown()
        c.shutdown()  # type: ignore[no-untyped-call]
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


@pytest.mark.slow  # a Ray cluster (~5-10 s to start here) and 6 cases: ~30 s
def test_collectors_on_a_second_node(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """One cluster for every case (a Ray cluster costs ~5-10 s to start here, and
    pytest-xdist would start one per worker for a module-scoped fixture)."""
    with two_nodes() as cluster:
        pool = every_far_actors_steps_on_disk_in_order_and_a_killed_or_cut_off_one_is_named(
            cluster, tmp_path / "kill", capfd
        )
        a_learner_gone_mid_run_never_holds_a_collector(pool, tmp_path / "gone")
        a_hub_that_never_answers_makes_the_producer_drop_by_its_policy()
        a_far_actor_logs_media_through_ray_into_the_runs_encoder(pool, tmp_path / "media")
        a_far_actors_own_rules_judge_its_steps_in_the_run(pool, tmp_path / "rules")
        serve_and_remote_check_their_arguments_and_a_logger_pickles(tmp_path / "args")


class _Collector:
    """A collector actor: logs its steps like ``tests/remote_child.collector``."""

    def __init__(self, link: Any, name: str, rules: Any = None) -> None:
        self.log = link.remote(name, rules=rules)

    def relink(self, link: Any, name: str, rules: Any = None) -> None:
        """Log to another run from now on (this actor's last logger is closed)."""
        self.log = link.remote(name, rules=rules)

    def node(self) -> str:
        return str(ray.get_runtime_context().get_node_id())

    def run(self, start: int, stop: int, nan_at: int = 0) -> None:
        for i in range(start, stop):
            self.log.log_collector(i * 10, i, 0.5)
            x = float("nan") if 0 < nan_at <= i else float(i)
            self.log.log_step(i, {"x": x}, axes={"collect_rounds": 2 * i})
        self.log.flush()

    def close(self) -> RemoteReport:
        report: RemoteReport = self.log.close()
        return report

    def media(self) -> RemoteReport:
        import numpy as np

        frames = np.zeros((4, 8, 6, 3), np.uint8)
        frames[1::2] = 255
        self.log.log_video("collector/episode", frames, step=11, fps=5)
        self.log.flush()  # the hub has the video: its bytes are back in the budget
        self.log.log_video("collector/episode", frames[::-1], step=13, fps=5)
        self.log.log_image("collector/frame", frames[1], step=12)
        with pytest.warns(aoff.AoffWarning, match="media_budget=1,024"):
            self.log.log_image("too/big", np.zeros((32, 32, 3), np.uint8))  # refused
        with pytest.raises(ValueError, match="dataformats"):
            self.log.log_image("bad", frames[0], dataformats="XYZ")  # the shared checks
        return self.close()


def _collectors(link: Any, names: list[str], rules: Any = None) -> list[Any]:
    actor = ray.remote(num_cpus=0, resources={"far": 1}, max_restarts=0)(_Collector)
    return [actor.remote(link, n, rules) for n in names]


def _relinked(pool: list[Any], link: Any, names: list[str], rules: Any = None) -> list[Any]:
    """The first ``len(names)`` actors of ``pool`` (on the far node), each now logging
    to ``link`` as its name."""
    actors = pool[: len(names)]
    assert len(actors) == len(names)
    ray.get([a.relink.remote(link, n, rules) for a, n in zip(actors, names, strict=True)])
    return actors


def a_far_actors_own_rules_judge_its_steps_in_the_run(pool: list[Any], run: Path) -> None:
    """``link.remote(name, rules=...)`` on another node: the rules go with the actor's
    pushes to the hub, whose producer brings them to the run; judged there on that
    actor's steps only (another actor's NaN, without rules, fires nothing: the run itself
    watches no NaN)."""
    log = OffPolicyLogger(
        log_dir=str(run),
        backends=("jsonl",),
        log_backend="none",
        handle_sigterm=False,
        rules=[rules.stalled(300)],
    )
    link = aoff.ray.serve(log)
    watched, plain = pool
    _relinked([watched], link, ["watched"], [rules.nonfinite(stop=True)])
    _relinked([plain], link, ["plain"])
    ray.get([a.run.remote(1, 11, nan_at=4) for a in (watched, plain)])  # each flushed
    log.flush()  # the agent's alert has reached this process
    assert log.should_stop
    assert [(a.tag, a.step) for a in log.alerts] == [("watched:train/x", 40)]
    ray.get([a.close.remote() for a in (watched, plain)])
    log.finish()
    lines = (run / rules.ALERTS_NAME).read_text().splitlines()
    assert len(lines) == 1 and '"watched:train/x"' in lines[0], lines


def _logger(run: Path) -> OffPolicyLogger:
    return OffPolicyLogger(
        log_dir=str(run), backends=("jsonl",), log_backend="tensorboard", handle_sigterm=False
    )


def every_far_actors_steps_on_disk_in_order_and_a_killed_or_cut_off_one_is_named(
    cluster: Any, run: Path, capfd: pytest.CaptureFixture[str]
) -> list[Any]:
    """Three actors on the far node and one on a node added for it: the one killed mid-run
    and the one whose node is removed mid-run are each declared lost and named, with what
    they had delivered; the two others go on to the end, every step on disk, in order.
    Returns those two (alive, their loggers closed) for the later cases."""
    log = _logger(run)
    link = aoff.ray.serve(log, lost_after=3.0)
    names = ["c0", "c1", "doomed"]
    actors = _collectors(link, names)  # they start while the node below starts
    node = cluster.add_node(num_cpus=1, resources={"doomed_node": 1}, include_log_monitor=False)
    try:
        cluster.wait_for_nodes()
        cut_off = ray.remote(num_cpus=0, resources={"doomed_node": 1}, max_restarts=0)(
            _Collector
        ).remote(link, "on-the-lost-node")
        here = ray.get_runtime_context().get_node_id()
        where = ray.get([a.node.remote() for a in actors])
        assert here not in where and ray.get(cut_off.node.remote()) not in (here, *where)
        # each flushed: on disk
        ray.get([a.run.remote(1, STEPS + 1) for a in actors] + [cut_off.run.remote(1, 101)])
    finally:
        cluster.remove_node(node)
    ray.kill(actors[2])
    ray.get([a.run.remote(STEPS + 1, 2 * STEPS + 1) for a in actors[:2]])
    reports = ray.get([a.close.remote() for a in actors[:2]])
    for n, r in zip(names, reports, strict=False):
        assert r == RemoteReport(n, 4 * STEPS, 0, 4 * STEPS, None), r
    wait_until(
        lambda: len(link.lost()) == 2,
        timeout=60,
        interval=0.1,
        what="the hub to declare 'doomed' and the removed node's producer lost",
    )
    assert sorted(link.lost()) == [("doomed", 2 * STEPS), ("on-the-lost-node", 200)]
    log.log_step(1, {"loss": 1.0})
    report = log.finish()  # nothing left open: it does not wait for the lost ones
    assert report.steps == 1 and not report.backend_errors
    err = capfd.readouterr().err
    assert "remote 'doomed' (pid " in err and f"{2 * STEPS:,} events came from it" in err, err
    assert "remote 'on-the-lost-node' (pid " in err and "200 events came from it" in err, err

    rows = read_jsonl(run / "metrics.jsonl")
    for n, steps in (("c0", 2 * STEPS), ("c1", 2 * STEPS), ("doomed", STEPS)):
        mine = [x for x in rows if x.get("producer") == n]
        assert [x["iteration"] for x in mine] == list(range(1, steps + 1)), n
        assert [x["step"] for x in mine] == [i * 10 for i in range(1, steps + 1)], n
        # the actor's axes= came with its steps (issue #50)
        assert [x["axis/collect_rounds"] for x in mine] == [2 * i for i in range(1, steps + 1)]
        tb = read_tensorboard(run / n)
        assert [s for s, _ in tb["train/x"]] == [i * 10 for i in range(1, steps + 1)], n
    cut = [x["iteration"] for x in rows if x.get("producer") == "on-the-lost-node"]
    assert cut == list(range(1, 101))
    assert [x["iteration"] for x in rows if "producer" not in x] == [1]
    return actors[:2]


def _gone(actor: Any) -> bool:
    """Whether a killed actor answers no more (its death known to the caller)."""
    try:
        ray.get(actor.ping.remote(), timeout=10)
    except ray.exceptions.RayActorError:
        return True
    except ray.exceptions.GetTimeoutError:
        return False
    return False


def a_learner_gone_mid_run_never_holds_a_collector(pool: list[Any], tmp_path: Path) -> None:
    """The hub dies with the learner: the collector's calls go on returning, and its
    close() says what was handed over and what was dropped, within its bound."""
    log = _logger(tmp_path / "run")
    link = aoff.ray.serve(log)
    (actor,) = _relinked(pool, link, ["orphan"])
    ray.get(actor.run.remote(1, 101))
    ray.kill(link.hub)  # the learner's side is gone
    # ray.kill returns before the hub's process is: calls already on their way may still
    # be served (at load 20 the collector's 101.. were), so wait for the death to show
    wait_until(lambda: _gone(link.hub), timeout=120, what="the killed hub to be gone")
    ray.get(actor.run.remote(101, 201))
    report = ray.get(actor.close.remote(), timeout=30)
    assert (report.sent, report.dropped, report.received) == (200, 200, None), report
    assert report.error is not None and "hub is gone" in report.error
    log.finish()
    rows = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert [x["iteration"] for x in rows if x.get("producer") == "orphan"] == list(range(1, 101))


class _Stuck:
    """A hub that never answers (a learner that stopped reading, or an unreachable node)."""

    def push(self, *args: Any) -> None:
        time.sleep(3600)  # on purpose: never answers

    def beat(self, *args: Any) -> None:
        time.sleep(3600)  # on purpose: never answers


def a_hub_that_never_answers_makes_the_producer_drop_by_its_policy() -> None:
    from aoff.ray import RayLink

    stuck = ray.remote(num_cpus=0, concurrency_groups={"ctl": 2})(_Stuck).remote()
    try:
        # a bound of 0.5 s on each flush and close: four of them wait it out here
        link = RayLink(stuck, 500, "drop_oldest", 0.5, 0.01, 100, 2)
        rlog = link.remote("stalled")
        for i in range(10_000):  # returns at once: the hot path only appends
            rlog.log_step(i, {"x": 1.0})
        rlog.flush()  # bounded by the link's timeout
        report = rlog.close()  # likewise
        assert (report.sent, report.dropped, report.received) == (0, 10_000, None), report
        assert report.error is not None and "did not" in report.error
        images_dropped_by_the_policy_give_their_bytes_back(link)
        images_dropped_by_the_policy_give_their_bytes_back(link, "drop_newest")
    finally:
        ray.kill(stuck)


def images_dropped_by_the_policy_give_their_bytes_back(
    link: Any, overflow: str = "drop_oldest"
) -> None:
    """Behind a stuck hub, the buffer's policy drops images with the steps (the oldest,
    or the newest at the put): their bytes leave the budget, so 20 images of 144 B go on
    fitting in 1,024 B (no refusal)."""
    import dataclasses
    import warnings

    import numpy as np

    link = dataclasses.replace(link, media_budget=1024, overflow=overflow)
    rlog = link.remote(f"painter-behind-{overflow}")
    image = np.zeros((8, 6, 3), np.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", aoff.AoffWarning)  # a refusal would raise here
        p = probe_remote(rlog)
        for k in range(20):
            # drop_oldest: the image is out of the buffer (shipped or dropped) once all that
            # was before it is (drop_newest refuses it at the put, when the buffer is full)
            before = p.buffer_drained + p.buffer_dropped + p.buffered
            rlog.log_image("img", image, step=k)
            for i in range(600):  # beyond the buffer's 500
                rlog.log_step(i, {"x": 1.0})
            assert p.started
            wait_until(
                lambda n=before: p.buffer_drained + p.buffer_dropped > n,  # type: ignore[misc]
                timeout=30,
                interval=0.01,
                what="the image to leave the buffer",
            )
    report = rlog.close()
    assert report.sent == 0 and report.dropped == 20 * 601, report


def a_far_actor_logs_media_through_ray_into_the_runs_encoder(pool: list[Any], run: Path) -> None:
    """The frames travel pickled in the pusher's Ray calls; the run's encoder writes them
    under the tag as given (as for ``log.remote()``); over the producer's media budget a
    call is refused and counted, and the report counts it as an event like the others."""
    from tests.test_media import frames_of, png_pixels, read_images

    log = _logger(run)
    # two videos of 576 B fit in 1,024 only if the first came back after flush(); 3 KiB
    # never fits
    link = aoff.ray.serve(log, media_budget=1024)
    (actor,) = _relinked(pool, link, ["painter"])
    report = ray.get(actor.media.remote(), timeout=60)
    assert report == RemoteReport("painter", 4, 0, 4, None), report  # 3 media, 1 refused
    finished = log.finish()
    assert (finished.media_written, finished.media_refused) == (3, 1), finished
    images = read_images(run)
    (v, v2), (i,) = images["collector/episode"], images["collector/frame"]
    assert (v.step, v2.step, i.step) == (11, 13, 12)
    assert (v.width, v.height, i.width, i.height) == (6, 8, 6, 8)
    gif = frames_of(v.encoded_image_string)
    assert len(gif) == 4 and (gif[0] == 0).all() and (gif[1] == 255).all()
    gif2 = frames_of(v2.encoded_image_string)
    assert len(gif2) == 4 and (gif2[0] == 255).all() and (gif2[1] == 0).all()
    assert (png_pixels(i.encoded_image_string) == 255).all()
    assert "too/big" not in images


def serve_and_remote_check_their_arguments_and_a_logger_pickles(tmp_path: Path) -> None:
    import pickle

    log = _logger(tmp_path / "run")
    try:
        with pytest.raises(ValueError, match="lost_after must be >= 2s"):
            aoff.ray.serve(log, lost_after=1.0)
        with pytest.raises(ValueError, match="max_in_flight must be a positive int"):
            aoff.ray.serve(log, max_in_flight=0)
        link = aoff.ray.serve(log)
        with pytest.raises(ValueError, match="bad producer name"):
            link.remote("../up")
        rlog = pickle.loads(pickle.dumps(link.remote("p")))
        assert rlog.close() == RemoteReport("p", received=0)  # never used: nothing to send
        with pytest.raises(RuntimeError, match=r"log_step\(\) on RayLogger 'p' after its close"):
            rlog.log_step(1)
    finally:
        log.finish()
    no_dir = OffPolicyLogger(log_backend="none", handle_sigterm=False, pump="thread")
    try:
        with pytest.raises(ValueError, match="needs a log_dir"):
            aoff.ray.serve(no_dir)
    finally:
        no_dir.finish()
