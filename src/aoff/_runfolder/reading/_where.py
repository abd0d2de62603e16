"""The ``--where`` language: which runs to keep, by their config, summary and tags.

Why a module of its own: ``aoff ls/compare/export --where`` and ``read_scalars(...,
where=)`` take one filter, written by users on a command line, so it is parsed by our own
tokenizer and parser (user text is never given to ``eval``), and a mistake is one
``ValueError`` naming what was expected and where (the text with a caret under it). The
values a filter reads come from the run index (``_runindex``); this module knows only
their shape: a mapping of ``run``, ``tags``, ``config``, ``summary`` and ``last``.

The language (``docs/guides/many-runs.md`` has the table)::

    expr    := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | test
    test    := operand [("==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not in") operand]
    operand := STRING | NUMBER | true | false | null | "[" literals "]" | field | "(" expr ")"
    field   := run | tags | config.KEY | summary.KEY | last.TAG   (or NAME["any key"])

A field a run lacks is *missing*: every comparison with it is false (``!=`` too), so
``config.seed < 5`` never keeps a run without a seed. Numbers compare with numbers and
texts with texts (never a number with a text, and ``true`` is not ``1``); ``a in b`` is
membership when ``b`` is a list (``tags``, a list literal) and substring when both are
texts; ``a not in b`` is ``not (a in b)``. A test alone (``config.use_per``) is true when
the value is ``true``.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["FIELDS", "MISSING", "Where", "WhereError", "compile_where"]

#: the fields a filter may read: a name alone, or a name with a key after a dot
FIELDS = {
    "run": "the run's path under the folder given (a text)",
    "tags": "the run's tag names (a list: 'train/loss' in tags)",
    "config": "config.KEY: the run's config (config.json, or aoff's HParams file)",
    "summary": "summary.KEY: step, iteration, records, state, first_time, last_time, kind",
    "last": "last.TAG: the tag's last value (last.reward/mean)",
}
_KEYED = frozenset({"config", "summary", "last"})


class _Missing:
    """A field the run does not have (printed as ``missing``)."""

    def __repr__(self) -> str:
        return "missing"


MISSING: Any = _Missing()


class WhereError(ValueError):
    """A filter that cannot be parsed: what was expected, and where (with a caret)."""

    def __init__(self, text: str, pos: int, what: str) -> None:
        self.text, self.pos, self.what = text, pos, what
        super().__init__(f"--where: {what} at column {pos + 1}\n  {text}\n  {' ' * pos}^")


@dataclass(frozen=True)
class _Tok:
    kind: str  # "str", "num", "name", "op", "end"
    value: Any
    pos: int


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_./\-]*")
_NUMBER = re.compile(
    r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf(?![\w./-])|nan(?![\w./-]))"
)
_OPS = ("==", "!=", "<=", ">=", "<", ">", "(", ")", "[", "]", ",")
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'"}
_WORDS = frozenset({"and", "or", "not", "in", "true", "false", "null"})


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c in "\"'":
            j, chars = i + 1, []
            while j < n and text[j] != c:
                if text[j] == "\\":
                    if j + 1 >= n or text[j + 1] not in _ESCAPES:
                        raise WhereError(
                            text, j, "an unknown escape in a text (\\n \\t \\\\ \\\" \\')"
                        )
                    chars.append(_ESCAPES[text[j + 1]])
                    j += 2
                    continue
                chars.append(text[j])
                j += 1
            if j >= n:
                raise WhereError(text, i, f"a text opened with {c} is never closed")
            out.append(_Tok("str", "".join(chars), i))
            i = j + 1
            continue
        m = _NUMBER.match(text, i)
        if m:
            end = m.end()
            if end < n and (text[end].isalnum() or text[end] in "_."):
                raise WhereError(text, i, f"a malformed number {text[i : end + 1]!r}")
            out.append(_Tok("num", _number(m.group()), i))
            i = end
            continue
        m = _NAME.match(text, i)
        if m:
            word = m.group()
            out.append(_Tok("name" if word not in _WORDS else "op", word, i))
            i = m.end()
            continue
        op = next((o for o in _OPS if text.startswith(o, i)), None)
        if op is None:
            hint = " (use == to compare)" if c == "=" else ""
            raise WhereError(text, i, f"an unexpected character {c!r}{hint}")
        out.append(_Tok("op", op, i))
        i += len(op)
    out.append(_Tok("end", None, n))
    return out


def _number(s: str) -> int | float:
    if re.fullmatch(r"[+-]?\d+", s):
        return int(s)
    return float(s)


Node = Callable[[Mapping[str, Any]], Any]


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "num"
    if isinstance(v, str):
        return "str"
    if isinstance(v, list | tuple | frozenset | set):
        return "list"
    return "null" if v is None else "other"


def _equal(a: Any, b: Any) -> bool:
    t = type(a)
    if t is type(b) and (t is str or t is int):  # the common case, decided at once
        return bool(a == b)
    ka = _kind(a)
    if ka != _kind(b):
        return False
    if ka == "list":
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _ordered(op: str, a: Any, b: Any) -> bool:
    t = type(a)
    if t is type(b) and (t is int or t is str):  # no NaN, no mixed kinds: at once
        return _ORDER[op](a, b)
    ka = _kind(a)
    if ka not in ("num", "str") or ka != _kind(b):
        return False
    if ka == "num" and (math.isnan(a) or math.isnan(b)):
        return False
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def _contains(a: Any, b: Any) -> bool:
    kb = _kind(b)
    if kb == "list":
        return any(_equal(a, x) for x in b)
    if kb == "str" and _kind(a) == "str":
        return a in b
    return False


def _test(op: str, left: Node, right: Node) -> Node:
    if op == "in":
        return lambda r: (
            (a := left(r)) is not MISSING and (b := right(r)) is not MISSING and (_contains(a, b))
        )
    if op == "not in":
        return lambda r: (
            not (
                (a := left(r)) is not MISSING and (b := right(r)) is not MISSING and _contains(a, b)
            )
        )
    if op in ("==", "!="):
        want = op == "=="

        def eq(r: Mapping[str, Any]) -> bool:
            a, b = left(r), right(r)
            if a is MISSING or b is MISSING:
                return False
            return _equal(a, b) == want

        return eq
    return lambda r: (
        (a := left(r)) is not MISSING and (b := right(r)) is not MISSING and (_ordered(op, a, b))
    )


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def _is(self, value: str) -> bool:
        return self.tok.kind == "op" and self.tok.value == value

    def _fail(self, what: str) -> WhereError:
        t = self.tok
        got = "the end" if t.kind == "end" else repr(self.text[t.pos : t.pos + 12].split()[0])
        return WhereError(self.text, t.pos, f"expected {what}, found {got}")

    def parse(self) -> Node:
        if self.tok.kind == "end":
            raise WhereError(self.text, 0, "an empty filter")
        node = self._or()
        if self.tok.kind != "end":
            raise self._fail("and, or, or the end")
        return node

    def _or(self) -> Node:
        parts = [self._and()]
        while self._is("or"):
            self.i += 1
            parts.append(self._and())
        if len(parts) == 1:
            return parts[0]
        return lambda r: any(p(r) for p in parts)

    def _and(self) -> Node:
        parts = [self._not()]
        while self._is("and"):
            self.i += 1
            parts.append(self._not())
        if len(parts) == 1:
            return parts[0]
        if len(parts) == 2:  # the common case, without a generator per run
            first, second = parts
            return lambda r: first(r) and second(r)
        return lambda r: all(p(r) for p in parts)

    def _not(self) -> Node:
        if self._is("not"):
            self.i += 1
            inner = self._not()
            return lambda r: not inner(r)
        return self._compare()

    def _compare(self) -> Node:
        start = self.tok
        left = self._operand()
        op: str | None = None
        if self.tok.kind == "op" and self.tok.value in ("==", "!=", "<", "<=", ">", ">=", "in"):
            op = str(self.tok.value)
            self.i += 1
        elif self._is("not") and self.toks[self.i + 1].value == "in":
            op = "not in"
            self.i += 2
        if op is None:
            if start.kind == "op" and start.value == "(":
                return left  # a parenthesised expression stands as it is
            return lambda r: left(r) is True
        right = self._operand()
        return _test(op, left, right)

    def _operand(self) -> Node:
        t = self.tok
        if t.kind in ("str", "num"):
            self.i += 1
            v = t.value
            return lambda r: v
        if t.kind == "op" and t.value in ("true", "false", "null"):
            self.i += 1
            c = {"true": True, "false": False, "null": None}[t.value]
            return lambda r: c
        if self._is("("):
            self.i += 1
            inner = self._or()
            if not self._is(")"):
                raise self._fail("')'")
            self.i += 1
            return inner
        if self._is("["):
            return self._list()
        if t.kind == "name":
            return self._field()
        raise self._fail("a value (a text, a number, true, false, null, a list or a field)")

    def _list(self) -> Node:
        self.i += 1
        items: list[Any] = []
        while not self._is("]"):
            t = self.tok
            if t.kind in ("str", "num"):
                items.append(t.value)
            elif t.kind == "op" and t.value in ("true", "false", "null"):
                items.append({"true": True, "false": False, "null": None}[t.value])
            else:
                raise self._fail("a text, a number, true, false or null in the list")
            self.i += 1
            if self._is(","):
                self.i += 1
            elif not self._is("]"):
                raise self._fail("',' or ']'")
        self.i += 1
        got = tuple(items)
        return lambda r: got

    def _field(self) -> Node:
        t = self.tok
        name: str = t.value
        self.i += 1
        space, _, key = name.partition(".")
        if space not in FIELDS:
            known = ", ".join(f"{f}." if f in _KEYED else f for f in FIELDS)
            raise WhereError(self.text, t.pos, f"an unknown field {name!r} (fields: {known})")
        if space in _KEYED and not key:
            if self._is("["):
                self.i += 1
                k = self.tok
                if k.kind != "str":
                    raise self._fail(f"a quoted key after {space}[")
                key = k.value
                self.i += 1
                if not self._is("]"):
                    raise self._fail("']'")
                self.i += 1
            else:
                raise WhereError(
                    self.text, t.pos, f'{space} needs a key ({space}.KEY or {space}["KEY"])'
                )
        elif space not in _KEYED and key:
            raise WhereError(self.text, t.pos, f"{space} takes no key ({name!r})")
        if space not in _KEYED:
            return lambda r: r.get(space, MISSING)

        def get(r: Mapping[str, Any]) -> Any:
            d = r.get(space)
            return MISSING if d is None else d.get(key, MISSING)

        return get


@dataclass(frozen=True)
class Where:
    """A parsed filter: call it with a run's fields (a mapping of ``run``, ``tags``,
    ``config``, ``summary`` and ``last``) for whether the run is kept."""

    text: str
    test: Node

    def __call__(self, fields: Mapping[str, Any]) -> bool:
        return bool(self.test(fields))


def compile_where(text: str) -> Where:
    """``text`` parsed once (``WhereError``, a ``ValueError``, when it is not a filter)."""
    if not isinstance(text, str):
        raise TypeError(f"where: a filter text, not {type(text).__name__}")
    return Where(text, _Parser(text).parse())
