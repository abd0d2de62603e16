"""Layouts learnt ahead: a read that knows which layouts come next, because an earlier
read of the file (or of another run of its client) learnt them from the same point.

Why a module of its own: it is a memory across reads (:data:`FORESEEN`, keyed by the
list of layouts a read knew), not a part of decoding; the bulk path asks it where a
sweep may start early and which records are the first of a layout (:class:`Ahead`), and
learns each such layout in its place, in file order, so ids and the frame's tag order
are the same as without it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._evindex import Index
from ._evlayout import Layout, Tail

__all__ = ["FORESEEN", "LATER", "Ahead"]


class Ahead:
    """The layouts a read learnt, in order, from where it knew some others: by the general
    decoder's records before a sweep, and in it (``FORESEEN``). A file's next read, or
    another run of its client, learns the same ones there: each from the first record of
    it in a window, read in its place (~10-20 us a record, decoded in full and looked up;
    the window's rest told its layouts again after): what this saves is ~0.3-0.6 ms of a
    ~9.6 ms warm read of CleanRL's PPO pattern at 300,000 steps. Here a sweep tells its
    window's records these layouts too (:meth:`ids`), and such a record, the first of its
    layout in the window, has its checksums checked and its layout learnt in its place
    (``FastPath._others``), its point decoded in bulk with the others. Only the layouts
    of one tag each whose value is a ``simple_value`` without metadata (a record of one
    says nothing else the general decoder notes) and which a ``Tail`` decodes (another
    shape, for a record or two, costs more in bulk than in the general decoder).

    The layout ids, and the tag ids they give (which order the folder's series), are as
    without this: every layout is learnt at its first record in file order, as before.
    A sweep starts early, where the general decoder would have read records one by one
    before it (:meth:`starts_here`), only where those records are each the first of a
    layout learnt so."""

    def __init__(self, layouts: list[Layout], learnt: list[tuple[bytes, bytes]]) -> None:
        self.layouts = tuple(layouts)
        #: the keys of every layout the read learnt (these the first of them): a read that
        #: learns the same notes nothing again
        self.learnt = learnt
        #: an index of these alone (is a record one of them?), and whether each is read so
        self.index = Index()
        for lid, lay in enumerate(layouts):
            self.index.add(lid, lay)
        self.tail = np.asarray([Tail.key(lay) is not None for lay in layouts], bool)

    def takes(self, size: int, record: bytes) -> bool:
        """Whether ``record`` (``size`` bytes) is of a layout learnt so."""
        slot = self.index.lookup(size, record)
        return slot >= 0 and bool(self.tail[slot])

    def starts_here(self, fore: Any, n0: int) -> bool:
        """Whether a sweep may start at a window whose records have ``fore`` (layout ids
        among these from ``n0`` on) where the general decoder would read the first: the
        records up to the first of a layout known or met before in the window are each the
        first of a layout learnt so (the general decoder reads those one by one, learning
        each, and then the sweep starts)."""
        new = fore >= n0
        seen = np.zeros(len(fore), bool)
        if new.any():
            at = np.flatnonzero(new)
            seen[at[np.unique(fore[at], return_index=True)[1]]] = True
        stop = int(np.argmin(seen)) if not seen.all() else len(fore)
        if stop < len(fore) and fore[stop] < 0:
            return False  # (a record of no layout known: the general decoder reads it)
        return bool(self.tail[fore[:stop] - n0].all())

    def ids(self, fore: Any, n0: int) -> tuple[Any, dict[int, int]]:
        """The records' layout ids for ``FastPath._others`` from ``fore`` (ids among these
        from ``n0`` on): the first record of each layout learnt so is unknown (-1), named
        in the dict (record -> its layout here); the others of it ``LATER``
        (:meth:`resolve`); those of the other layouts here unknown."""
        ids = fore.copy()
        new = np.flatnonzero(fore >= n0)
        firsts: dict[int, int] = {}
        if not len(new):
            return ids, firsts
        ids[new] = LATER
        slots, at = np.unique(fore[new] - n0, return_index=True)
        for slot, rec in zip(slots.tolist(), new[at].tolist(), strict=True):
            if self.tail[slot]:
                firsts[rec] = slot
                ids[rec] = -1
            else:
                ids[new[fore[new] == slot + n0]] = -1
        return ids, firsts

    def resolve(self, ids: Any, slots: Any, known: dict[tuple[bytes, bytes], int]) -> None:
        """The ``LATER`` records' ids once their layouts are learnt (``slots``: each
        record's layout here; ``known``: a layout's id by its key; -1 for one not learnt:
        beyond where the sweep stops)."""
        later = np.flatnonzero(ids == LATER)
        if len(later):
            lut = np.asarray([known.get(lay.key, -1) for lay in self.layouts], np.int64)
            ids[later] = lut[slots[later]]


#: the layouts a read learnt from where it knew some (by those: their ids and keys, in the
#: order added) to the end of its next sweep: from the general decoder's records before
#: the sweep, and in it. A file's next read, or another run of its client, learns the same
#: ones there (``Ahead``); as many kept as ``_TABLES``
FORESEEN: dict[int, Ahead] = {}


#: a record of a layout learnt ahead (``Ahead.ids``), not its layout's first in a window
LATER = -4
