"""`@frozen` makes what `@dataclass(frozen=True, ...)` makes: each class here is declared twice, once each way, and
the two must agree on construction (defaults, factories, keyword-only fields, `__post_init__`, errors), equality,
hashing, repr, immutability, `dataclasses` helpers, pickling and copying."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import FrozenInstanceError, dataclass, field
from functools import partial
from typing import Any

import pytest

from kcost.model.frozen import frozen


@pytest.fixture(autouse=True, params=["bound by hand", "compiled"])
def init_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: with each `__init__` binding its calls by hand (as a class's first calls are), and compiled
    from the first call (as after `COMPILED_AT` calls)."""
    import kcost.model.frozen

    monkeypatch.setattr(kcost.model.frozen, "COMPILED_AT", 10**9 if request.param == "bound by hand" else 1)
    return str(request.param)


def twins(body: dict[str, Any], annotations: dict[str, str], **options: Any) -> tuple[type, type]:
    """The class declared by `@frozen(**options)` and by `@dataclass(frozen=True, **options)`, each a name of this
    module (so that it pickles)."""
    made = []
    for kind, decorate in (("ours", frozen(**options)), ("theirs", dataclass(frozen=True, **options))):
        namespace = {"__annotations__": dict(annotations), "__module__": __name__, "__doc__": "A twin.", **body}
        name = "_".join(["Twin", kind, *sorted(options)])
        cls = globals()[name] = decorate(type(name, (), namespace))
        made.append(cls)
    return made[0], made[1]


def same(ours: object, theirs: object) -> None:
    assert dataclasses.astuple(ours) == dataclasses.astuple(theirs)
    assert repr(ours) == repr(theirs).replace(type(theirs).__qualname__, type(ours).__qualname__)
    assert hash(ours) == hash(theirs)


@pytest.mark.parametrize("options", [{}, {"slots": True}, {"kw_only": True}, {"slots": True, "kw_only": True}])
def test_a_frozen_class_is_built_compared_and_kept_as_a_frozen_dataclass(options: dict[str, Any]) -> None:
    body = {
        "b": 2,
        "c": field(default_factory=list, hash=False),
        "d": field(default=0, compare=False),
        "e": field(default=5, repr=False),
    }
    ours, theirs = twins(body, {"a": "int", "b": "int", "c": "list[int]", "d": "int", "e": "int"}, **options)
    assert dataclasses.is_dataclass(ours)
    assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(theirs)]
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [((), {"a": 1}), ((), {"a": 1, "b": 3, "c": [4]})]
    if not options.get("kw_only"):
        calls += [((1,), {}), ((1, 2, [3], 9), {})]
    for args, kwargs in calls:
        a, b = ours(*args, **kwargs), theirs(*args, **kwargs)
        same(a, b)
        assert a == ours(*args, **kwargs) and a != b  # equal to its own kind only, as a dataclass is
        assert dataclasses.replace(a, d=7) == a and dataclasses.replace(b, d=7) == b
        assert ours(a=1).c is not ours(a=1).c  # a fresh default each time
        with pytest.raises(FrozenInstanceError):
            a.a = 2
        with pytest.raises(FrozenInstanceError):
            del a.a
        same(dataclasses.replace(a, b=8), dataclasses.replace(b, b=8))
        same(pickle.loads(pickle.dumps(a)), b)
        same(copy.deepcopy(a), b)
        assert pickle.loads(pickle.dumps(a)) == a
    for wrong in [((), {}), ((), {"a": 1, "z": 2}), ((1, 2, 3, 4, 5, 6), {})]:
        errors = []
        for cls in (ours, theirs):
            with pytest.raises(TypeError) as caught:
                cls(*wrong[0], **wrong[1])
            errors.append(str(caught.value).split("__init__() ")[-1])
        assert errors[0] == errors[1]
    assert hasattr(ours(a=1), "__dict__") == hasattr(theirs(a=1), "__dict__")


def test_post_init_non_init_fields_and_a_subclass() -> None:
    def __post_init__(self: Any) -> None:
        object.__setattr__(self, "total", self.a + self.b)

    body = {"b": 1, "total": field(default=0, init=False), "__post_init__": __post_init__}
    ours, theirs = twins(body, {"a": "int", "b": "int", "total": "int"}, slots=True)
    same(ours(4), theirs(4))
    assert ours(4).total == 5

    child = frozen(kw_only=True)(type("Child", (ours,), {"__annotations__": {"c": "int"}, "__module__": __name__}))
    made = child(1, 2, c=3)
    assert (made.a, made.b, made.c, made.total) == (1, 2, 3, 3)
    assert [f.name for f in dataclasses.fields(child)] == ["a", "b", "total", "c"]
    assert made == child(1, 2, c=3) and made != ours(1, 2)


@pytest.mark.parametrize("child_slots", [False, True])
def test_a_class_deriving_from_a_slotted_one_and_one_with_no_fields_pickle_whole(child_slots: bool) -> None:
    made = []
    for decorate in (frozen, partial(dataclass, frozen=True)):
        fields = {"__annotations__": {"a": "int", "b": "int"}, "b": 1, "__module__": __name__}
        base = decorate(slots=True)(type("Base", (), fields))
        own = {"__annotations__": {"c": "int"}, "__module__": __name__}
        child = decorate(slots=child_slots, kw_only=True)(type("Child", (base,), own))
        empty = decorate(slots=True)(type("Empty", (), {"__module__": __name__}))
        globals().update(Base=base, Child=child, Empty=empty)  # for pickle to find them by name
        made.append([pickle.loads(pickle.dumps(x)) for x in (child(1, 2, c=3), base(4), empty())])
    ours, theirs = made
    for a, b in zip(ours, theirs, strict=True):
        assert dataclasses.astuple(a) == dataclasses.astuple(b)
    assert (ours[0].a, ours[0].b, ours[0].c) == (1, 2, 3) and ours[1].b == 1


def test_a_class_keeps_the_methods_it_writes_and_eq_false_keeps_identity() -> None:
    def __repr__(self: Any) -> str:
        return "mine"

    ours = frozen(type("Own", (), {"__annotations__": {"a": "int"}, "__module__": __name__, "__repr__": __repr__}))
    assert repr(ours(1)) == "mine" and ours(1) == ours(1)
    plain = frozen(eq=False)(type("Plain", (), {"__annotations__": {"a": "int"}, "__module__": __name__}))
    one = plain(1)
    assert one != plain(1) and one == one and hash(one) == object.__hash__(one)


def test_kcost_results_are_frozen_dataclasses() -> None:
    from kcost.model.calls import Usage

    usage = Usage(prompt=10, cached=0, output=2)
    assert dataclasses.is_dataclass(usage) and dataclasses.replace(usage, output=3).output == 3
    with pytest.raises(FrozenInstanceError):
        usage.prompt = 1


def test_a_class_binds_its_first_calls_by_hand_and_compiles_its_init_at_the_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import inspect

    import kcost.model.frozen

    monkeypatch.setattr(kcost.model.frozen, "COMPILED_AT", 3)
    body = {"b": 2, "c": field(default_factory=list, hash=False)}
    ours, theirs = twins(body, {"a": "int", "b": "int", "c": "list[int]"}, slots=True)
    placeholder = ours.__dict__["__init__"]
    for n in range(5):
        same(ours(n, c=[n]), theirs(n, c=[n]))
        with pytest.raises(TypeError):  # refused as the compiled one refuses it, before and after
            ours(n, a=n)
        compiled = ours.__dict__["__init__"] is not placeholder
        assert compiled == (n >= 1)  # the third call (the second loop's first) compiles it
    assert list(inspect.signature(ours).parameters) == ["a", "b", "c"]
