"""What encoding a frame of the standard mix costs: pickle next to msgspec, msgpack, struct.

The training process pickles its events on the caller's thread (``_pump/_backlog.
pack_events``) and the agent unpickles them (``unpack_events``); this times both for
frames of the standard workload's events (``_workload.py``: the 4 calls of an iteration,
built by aoff's own recorder, so the tuples and dict copies are the ones shipped) at
several frame sizes, next to:

``msgspec``
    ``msgspec.msgpack.Encoder().encode`` of the same list; decoded with a
    ``Decoder(list[tuple])`` (events come back as tuples, a dict stays a dict)
``msgpack``
    ``msgpack.packb`` / ``unpackb`` (if installed)
``struct``
    a hand-written columnar encoding: one ``struct.Struct`` per event kind and dict key
    sequence (keys sent once per frame), values packed with it; the Python loop over
    events is what it costs (the layout the TensorBoard encoder uses for a record)

Per event: encode and decode time (best of ``--repeat`` rounds, garbage collection off)
and bytes. Only pickle keeps what the fold must see exactly (``str`` subclasses among a
dict's keys are refused by the fold; msgspec encodes them as plain ``str``; arrays come
back as lists), so the others are upper bounds on what a switch could save.

    python benchmarks/bench_encoding.py [--sizes 4096,256,24] [--repeat 200]
"""

from __future__ import annotations

import argparse
import gc
import pickle
import struct
import time
from collections.abc import Callable
from typing import Any

import _workload as w
import msgspec

from aoff._core._recorder import Recorder


class _Collect(Recorder[None]):
    pass


def standard_events(n_iterations: int) -> list[tuple[Any, ...]]:
    events: list[tuple[Any, ...]] = []
    rec = _Collect()
    rec._init_recorder(events.append, time.time)
    w.iterate(rec, 0, n_iterations)
    return events


def struct_codec() -> tuple[Callable[[list[Any]], bytes], Callable[[bytes], list[Any]]]:
    """A columnar struct encoding of the standard mix (None values as NaN)."""
    layouts: dict[tuple[Any, ...], int] = {}
    shapes: list[tuple[Any, ...]] = []
    packers: list[struct.Struct] = []
    head = struct.Struct("<HI")

    def shape(e: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(tuple(x) if type(x) is dict else type(x) for x in e)

    def encode(events: list[Any]) -> bytes:
        parts = [head.pack(len(events), 0)]
        for e in events:
            key = shape(e)
            i = layouts.get(key)
            if i is None:
                i = layouts[key] = len(shapes)
                shapes.append(key)
                n = sum(len(k) if type(k) is tuple else 1 for k in key)
                packers.append(struct.Struct(f"<{n}d"))
            flat: list[float] = []
            for x in e:
                if type(x) is dict:
                    flat.extend(x.values())
                else:
                    flat.append(float("nan") if x is None else x)
            parts.append(i.to_bytes(2, "little") + packers[i].pack(*flat))
        return b"".join(parts)

    def decode(data: bytes) -> list[Any]:
        n, _ = head.unpack_from(data, 0)
        pos, out = head.size, []
        for _ in range(n):
            i = int.from_bytes(data[pos : pos + 2], "little")
            p = packers[i]
            vals = iter(p.unpack_from(data, pos + 2))
            pos += 2 + p.size
            out.append(
                tuple(
                    dict(zip(k, vals, strict=False)) if type(k) is tuple else next(vals)
                    for k in shapes[i]
                )
            )
        return out

    return encode, decode


def best(f: Callable[[], object], repeat: int) -> float:
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        t = min(t, time.perf_counter() - t0)
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="4096,1024,256,64,24,16")
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    events = standard_events(max(sizes) // 4 + 1)
    codecs: dict[str, tuple[Callable[[Any], bytes], Callable[[bytes], Any]]] = {
        "pickle": (lambda b: pickle.dumps(b, protocol=5), pickle.loads),
        "msgspec": (msgspec.msgpack.Encoder().encode, msgspec.msgpack.Decoder(list[tuple]).decode),
    }
    try:
        import msgpack

        codecs["msgpack"] = (msgpack.packb, msgpack.unpackb)
    except ImportError:
        print("(msgpack not installed: left out)")
    codecs["struct"] = struct_codec()
    gc.disable()
    print("| events a frame | codec | encode µs/event | decode µs/event | bytes/event |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for size in sizes:
        batch = events[:size]
        rounds = max(10, args.repeat * 64 // size)
        for name, (enc, dec) in codecs.items():
            data = enc(batch)
            te = best(lambda: enc(batch), rounds)  # noqa: B023 - called in this iteration
            td = best(lambda: dec(data), rounds)  # noqa: B023
            print(
                f"| {size:,} | {name} | {te / size * 1e6:.3f} | {td / size * 1e6:.3f} "
                f"| {len(data) / size:.1f} |"
            )
    gc.enable()


if __name__ == "__main__":
    main()
