"""`@frozen`: a frozen dataclass, made at a fraction of the import cost.

A stand-in for `dataclasses.dataclass(frozen=True)`, kept for the cold start it buys: with the library's decorator
in its place, a cold `kcost bill` of the lesson's spec takes 0.089 s where it takes 0.066 s with this one (+35%,
past the start-up target of docs/performance.md), and a bill of a 10,000-turn spec 6% longer (its `__init__`
sets each field through `object.__setattr__`); measured by `bench/bench_startup.py` and `bench/bench_turnspec.py`.

Every result and record in kcost is a frozen dataclass, and a process makes some fifty of them before it does any
work: `dataclasses` compiles six methods a class (`__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__`,
`__delattr__`), about 0.8 ms each class, a third of a cold `kcost bill`. `@frozen` makes the same class: a real
dataclass (`fields`, `replace`, `asdict`, `is_dataclass` and the JSON Schema see it as one) whose instances cannot
be changed, equal and hashed by their compared fields as a frozen dataclass is, with its repr. What it does not
compile up front: `__init__` binds a class's first calls by hand and is compiled at its `COMPILED_AT`-th (most
classes a process imports are built a few times in it, if at all; until then `inspect.signature` of the class
shows `(*args, **kwargs)`), and the other methods are shared by every class.

Its options are the dataclass options kcost uses (`kw_only`, `slots`, `eq`, `repr`); a class deriving from one
must be `@frozen` too, as dataclasses requires of a frozen dataclass's subclasses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError
from operator import attrgetter
from types import MemberDescriptorType
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: object) -> Callable[[Any], Any]:
        return lambda decorator: decorator


T = TypeVar("T", bound=type)


@overload
def frozen(cls: T, /) -> T: ...


@overload
def frozen(*, kw_only: bool = False, slots: bool = False, eq: bool = True, repr: bool = True) -> Callable[[T], T]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(
    cls: T | None = None, /, *, kw_only: bool = False, slots: bool = False, eq: bool = True, repr: bool = True
) -> T | Callable[[T], T]:
    def made(cls: T) -> T:
        return _made(cls, kw_only=kw_only, slots=slots, eq=eq, repr=repr)

    return made if cls is None else made(cls)


def _made(cls: T, *, kw_only: bool, slots: bool, eq: bool, repr: bool) -> T:
    # the fields, slots and __match_args__ as dataclasses lays them out; no method compiled
    undocumented = not cls.__doc__
    if undocumented:  # spares dataclasses writing one from the signature (which parses object's)
        cls.__doc__ = f"{cls.__name__}(...)"
    made: Any = dataclasses.dataclass(cls, init=False, repr=False, eq=False, kw_only=kw_only, slots=slots)
    fields = dataclasses.fields(made)
    if undocumented:  # its fields, as dataclasses would show them (and pydantic leaves out of a schema)
        made.__doc__ = f"{made.__name__}({', '.join(f.name for f in fields if f.init)})"

    bind: Callable[[object, tuple[object, ...], dict[str, object]], bool] | None = None
    calls = 0

    def __init__(self: object, *args: object, **kwargs: object) -> None:  # bound by hand until compiled
        nonlocal bind, calls
        calls += 1
        if calls < COMPILED_AT:
            if bind is None:
                bind = _binder(made, fields)
            if bind(self, args, kwargs):
                return
        init = _init(made, fields)  # the real one: compiled, or for a call it binds as Python would (its error)
        if calls >= COMPILED_AT:
            type.__setattr__(made, "__init__", init)
        init(self, *args, **kwargs)

    __init__.__qualname__ = f"{made.__qualname__}.__init__"
    own = made.__dict__
    setters: dict[str, Any] = {"__setattr__": _set, "__delattr__": _delete}
    if "__init__" not in own:
        setters["__init__"] = __init__
    if slots or hasattr(made, "__setstate__"):  # as dataclasses gives a frozen class with slots (and one deriving
        # from it): its field values in order, set back without __setattr__ (the names looked up once:
        # `dataclasses.fields` per object was most of pickling a bill)
        names = tuple(f.name for f in fields)
        values = field_values(list(names))

        def __getstate__(self: object) -> list[object]:
            return list(values(self))

        def __setstate__(self: object, state: list[object]) -> None:  # compiled on the class's first unpickling
            setstate = _setstate(made, names)
            type.__setattr__(made, "__setstate__", setstate)
            setstate(self, state)

        setters |= {"__getstate__": __getstate__, "__setstate__": __setstate__}
    if repr and "__repr__" not in own:
        setters["__repr__"] = _repr
    if eq:
        compared = field_values([f.name for f in fields if f.compare])
        hashed = field_values([f.name for f in fields if (f.compare if f.hash is None else f.hash)])

        def __eq__(self: object, other: object) -> bool:
            if other.__class__ is self.__class__:
                return bool(compared(self) == compared(other))
            return NotImplemented

        def __hash__(self: object) -> int:
            return hash(hashed(self))

        if "__eq__" not in own:
            setters["__eq__"] = __eq__
        if own.get("__hash__") is None:  # none of its own (a class's __eq__ of its own sets it to None)
            setters["__hash__"] = __hash__
    for name, method in setters.items():
        type.__setattr__(made, name, method)
    return made  # type: ignore[no-any-return]


def field_values(names: list[str]) -> Callable[[object], tuple[object, ...]]:
    """The values of the fields `names` as a tuple, in that order: what a dataclass compares and hashes (and what
    the JSON writer hands orjson of a report type)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda item: (one(item),)
    return lambda item: ()


# A class's `__init__` is compiled at its COMPILED_AT-th call: before, each call binds its arguments by hand (no
# compile, a few microseconds slower a call). Most classes a run makes are built a few times, if at all, and one
# compile costs as much as some fifty calls bound by hand.
COMPILED_AT = 32


def _binder(
    cls: type, fields: tuple[dataclasses.Field[Any], ...]
) -> Callable[[object, tuple[object, ...], dict[str, object]], bool]:
    """What the `__init__` of `_init` does, without compiling it: set each field from the arguments, its default
    or its factory, in field order, then `__post_init__`. False (nothing set) for a call whose arguments do not
    bind, which the compiled one then refuses with Python's own error."""
    positional = [f.name for f in fields if f.init and not f.kw_only]
    taken = frozenset(f.name for f in fields if f.init)
    required = frozenset(f.name for f in fields if f.init and f.default is MISSING and f.default_factory is MISSING)
    # each field: its name, whether an argument sets it, and what sets it otherwise (a factory's, or a default)
    steps = [(f.name, f.init, f.default_factory if f.default_factory is not MISSING else None, f.default)
             for f in fields if f.init or f.default_factory is not MISSING or f.default is not MISSING]  # fmt: skip
    post = hasattr(cls, "__post_init__")  # called on the instance, as the compiled one does (a subclass's own)
    set_field = object.__setattr__

    def bind(self: object, args: tuple[object, ...], kwargs: dict[str, object]) -> bool:
        if not taken.issuperset(kwargs):
            return False
        if args:
            if len(args) > len(positional):
                return False
            given = dict(zip(positional, args, strict=False))  # the rest from keywords or defaults
            if not given.keys().isdisjoint(kwargs):  # a positional one named again
                return False
            given.update(kwargs)
        else:
            given = kwargs
        if not required.issubset(given):
            return False
        for name, init, factory, default in steps:  # as the compiled one: a factory's field given MISSING is made
            if factory is not None:
                value = given.get(name, MISSING) if init else MISSING
                set_field(self, name, factory() if value is MISSING else value)
            elif init and name in given:
                set_field(self, name, given[name])
            else:
                set_field(self, name, default)
        if post:
            self.__post_init__()  # type: ignore[attr-defined]
        return True

    return bind


def _assign(cls: type, name: str, value: str, scope: dict[str, object]) -> str:
    """The statement that sets field `name` to `value` past the frozen `__setattr__`: through its slot's own
    setter where it has one (half the time of `object.__setattr__`, which looks the name up each call)."""
    slot = getattr(cls, name, None)
    if isinstance(slot, MemberDescriptorType):
        scope[f"_set_{name}"] = slot.__set__
        return f"_set_{name}(self, {value})"
    scope["_set"] = object.__setattr__
    return f"_set(self, {name!r}, {value})"


def _setstate(cls: type, names: tuple[str, ...]) -> Callable[[object, list[object]], None]:
    """The `__setstate__` of a slotted class: the field values of `__getstate__`, in order, set back."""
    scope: dict[str, object] = {}
    body = [f"    {''.join(f'{name}, ' for name in names)}= state"] if names else ["    () = state"]
    body += [f"    {_assign(cls, name, name, scope)}" for name in names]
    exec("def __setstate__(self, state):\n" + "\n".join(body) + "\n", scope)
    setstate: Callable[[object, list[object]], None] = scope["__setstate__"]  # type: ignore[assignment]
    setstate.__qualname__ = f"{cls.__qualname__}.__setstate__"
    return setstate


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    """The `__init__` dataclasses would write for `cls`, compiled once."""
    scope: dict[str, object] = {"_MISSING": MISSING}
    positional: list[str] = []
    keywords: list[str] = []
    body: list[str] = []
    for f in fields:
        if f.default_factory is not MISSING:
            scope[f"_make_{f.name}"] = f.default_factory
            default, value = "_MISSING", f"_make_{f.name}() if {f.name} is _MISSING else {f.name}"
            unset = f"_make_{f.name}()"
        elif f.default is not MISSING:
            scope[f"_default_{f.name}"] = f.default
            default = unset = f"_default_{f.name}"
            value = f.name
        else:
            default, value, unset = "", f.name, ""
        if not f.init:  # never given: set from its default, if it has one
            body += [f"    {_assign(cls, f.name, unset, scope)}"] if unset else []
            continue
        (keywords if f.kw_only else positional).append(f"{f.name}={default}" if default else f.name)
        body.append(f"    {_assign(cls, f.name, value, scope)}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    signature = ", ".join(["self", *positional, *(["*", *keywords] if keywords else [])])
    source = f"def __init__({signature}) -> None:\n" + "\n".join(body or ["    pass"]) + "\n"
    exec(source, scope)  # the one compile a class pays, as dataclasses does for each of its methods
    init: Callable[..., None] = scope["__init__"]  # type: ignore[assignment]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _set(self: object, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delete(self: object, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _repr(self: Any) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)
    return f"{self.__class__.__qualname__}({shown})"
