"""Which runs are seeds of one configuration: ``aoff compare``'s grouping of run folders.

Why a module of its own: the grouping decides every number ``compare`` prints, so its
rules are in one place and printed by the command. A run's group comes from its folder
name (the last part of its path):

- ``--group REGEX``: searched in the run's path as given; its first capture group names
  the group (a run it does not match is left out, with a line);
- by default, CleanRL's ``{env}__{exp}__{seed}__{time}`` names group by ``{env}__{exp}``;
  names ending in a seed (``…-seed3``, ``…_seed_3``, ``…_s3``, ``…-s3``) group by what
  comes before it; any other run is a group of its own.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

__all__ = ["Group", "compile_group", "group_runs"]

#: CleanRL: ``f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"``
_CLEANRL = re.compile(r"^(.+?__.+?)__\d+__\d+$")
_SEED_SUFFIX = re.compile(r"^(.+?)[-_](?:seed[-_]?|s)\d+$", re.IGNORECASE)


@dataclass
class Group:
    name: str
    runs: list[str] = field(default_factory=list)


def compile_group(pattern: str) -> re.Pattern[str]:
    """``--group``'s regular expression; ``ValueError`` when it is not one or has no
    capture group."""
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"--group {pattern!r} is not a regular expression: {exc}") from None
    if rx.groups < 1:
        raise ValueError(f"--group {pattern!r} has no capture group (…) to name the group")
    return rx


def default_group(run: str) -> str:
    name = os.path.basename(os.path.normpath(run))
    for rx in (_CLEANRL, _SEED_SUFFIX):
        m = rx.match(name)
        if m:
            return m.group(1)
    return name


def group_runs(
    runs: list[str], pattern: re.Pattern[str] | None, unmatched: list[str]
) -> list[Group]:
    """``runs`` in groups, in order of each group's first run; runs ``pattern`` does not
    match (or whose first group is empty) go to ``unmatched``."""
    groups: dict[str, Group] = {}
    for run in runs:
        if pattern is None:
            name = default_group(run)
        else:
            m = pattern.search(run)
            if m is None or not m.group(1):
                unmatched.append(run)
                continue
            name = m.group(1)
        groups.setdefault(name, Group(name)).runs.append(run)
    return list(groups.values())
