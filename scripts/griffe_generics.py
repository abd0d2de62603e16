"""griffe extension for the API reference: an inherited method's ``-> R`` made concrete.

The loggers share their logging methods through generic bases (``Recorder[R]``,
``MediaCalls[R]``): ``OffPolicyLogger`` is a ``Face[None]``, ``AsyncOffPolicyLogger`` a
``Face[Awaitable[None]]``. griffe documents an inherited method as its base wrote it,
so every logging call would read ``-> R``. For each class that names its type argument
in its bases, this gives the class its own copy of each inherited method that returns
``R``, returning that argument instead (``-> None``, ``-> Awaitable[None]``).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from griffe import Class, Extension, Function, Module, Object

_ARGUMENT = re.compile(r"^\w+\[(?P<arg>.+)\]$")
_TYPEVAR = "R"


def _argument(cls: Class) -> str | None:
    """The type argument the class gives its generic base (``Face[None]`` → ``None``)."""
    for base in cls.bases:
        m = _ARGUMENT.match(str(base))
        if m is not None and not m["arg"].startswith("R"):
            return m["arg"]
    return None


class ConcreteReturns(Extension):
    def on_package(self, *, pkg: Module, **kwargs: Any) -> None:
        self._walk(pkg)

    def _walk(self, obj: Object) -> None:
        for member in list(obj.members.values()):
            if member.is_alias:
                continue
            if isinstance(member, Class):
                self._concrete(member)
            if isinstance(member, Module | Class):
                self._walk(member)

    def _concrete(self, cls: Class) -> None:
        arg = _argument(cls)
        if arg is None:
            return
        for name, alias in cls.inherited_members.items():
            try:
                target = alias.final_target
            except Exception:  # an alias griffe cannot resolve: left as it is
                continue
            if isinstance(target, Function) and str(target.returns) == _TYPEVAR:
                own = copy.copy(target)
                own.returns = arg
                cls.set_member(name, own)


class ProtocolDocs(Extension):
    """A class that implements one of aoff's protocols (``Backend``, ``Display``)
    without inheriting it: each of its methods with no docstring gets the protocol's,
    so the page shows what ``open``, ``write`` or ``update`` do there too."""

    def on_package(self, *, pkg: Module, **kwargs: Any) -> None:
        classes = list(_classes(pkg))
        protocols = [c for c in classes if any("Protocol" in str(b) for b in c.bases)]
        for cls in classes:
            if cls in protocols:
                continue
            for proto in protocols:
                wanted = {n for n, m in proto.members.items() if isinstance(m, Function)}
                try:
                    members = cls.all_members
                except Exception:  # a base griffe cannot resolve: left as it is
                    continue
                if not wanted or not wanted <= set(members):
                    continue
                for name in wanted:
                    own, theirs = members[name], proto.members[name]
                    # inherited: the base's method (aoff's own) gets the protocol's words
                    target = own.final_target if own.is_alias else own
                    if target.docstring is None and theirs.docstring is not None:
                        target.docstring = copy.copy(theirs.docstring)
                        target.docstring.parent = target


def _classes(obj: Object) -> Any:
    for member in list(obj.members.values()):
        if member.is_alias:
            continue
        if isinstance(member, Class):
            yield member
        if isinstance(member, Module | Class):
            yield from _classes(member)
