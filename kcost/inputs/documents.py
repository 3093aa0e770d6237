"""JSON and YAML documents with the line of every value, so an error can name the line of the bad field.

JSON is read by the json module (its syntax errors carry the line); the lines of its values are the YAML
parser's (whose nodes know their lines), composed from the same text only when an error asks for one (a valid
document is parsed once). Duplicate keys are errors in both: a repeated key silently replaced is a changed bill.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from kcost.errors import InputError, format_loc

Lines = Mapping[tuple[object, ...], int]

# How deep a JSON document may nest (an object or an array is a level): orjson's reader refuses deeper ones (the
# readers' one JSON check, in `load_json`), and the one JSON writer (`kcost.results.common.dump_json`) holds every
# report to the same bound. orjson's bound is its own, not a setting: a test holds this constant to it.
MAX_DEPTH = 1024


def load_json(text: str, name: str) -> tuple[Any, Lines]:
    duplicate: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                duplicate.append(key)
            out[key] = value
        return out

    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import orjson

    try:  # the one JSON check: no lone surrogates, no NaN or infinities, nesting at most MAX_DEPTH deep
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", source=name, line=exc.lineno) from None
    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", source=name, line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:  # a number too long to convert, nesting too deep
        raise InputError(f"cannot read this document: {type(exc).__name__}", source=name) from None
    if duplicate:
        load_yaml(text, name)  # raises on the duplicate, with its line
        raise InputError("duplicate key", source=name, field=duplicate[0])
    return data, _JsonLines(text, name)


class _JsonLines(Mapping[tuple[object, ...], int]):
    """The lines of a JSON document's values, composed (by the YAML parser) when first asked for: none where
    it cannot compose the document."""

    def __init__(self, text: str, name: str) -> None:
        self._text, self._name = text, name
        self._lines: dict[tuple[object, ...], int] | None = None

    def _composed(self) -> dict[tuple[object, ...], int]:
        if self._lines is None:
            try:
                self._lines = dict(load_yaml(self._text, self._name)[1])
            except InputError:
                self._lines = {}
            self._text = ""
        return self._lines

    def __getitem__(self, key: tuple[object, ...]) -> int:
        return self._composed()[key]

    def __iter__(self) -> Iterator[tuple[object, ...]]:
        return iter(self._composed())

    def __len__(self) -> int:
        return len(self._composed())


def line_for(lines: Lines, field: str | None) -> int | None:
    """The line of `field` (`usage.prompt_tokens`, `messages[2].role`), or of the nearest value that holds it."""
    path: list[object] = []
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", field or ""):
        path.append(int(part[1:-1]) if part.startswith("[") else part)
    for cut in range(len(path), -1, -1):
        if tuple(path[:cut]) in lines:
            return lines[tuple(path[:cut])]
    return None


def load_yaml(text: str, name: str) -> tuple[Any, Lines]:
    """`text`'s data and the line of each value by its path; plain YAML (`kcost.inputs.plain_yaml`) without the YAML
    parser, any other by it."""
    # deferred: start-up: a cold bill does without it (bench/bench_startup.py)
    from kcost.inputs.plain_yaml import plain

    read = plain(text)
    return read if read is not None else load_yaml_by_parser(text, name)


def load_yaml_by_parser(text: str, name: str) -> tuple[Any, Lines]:
    """`load_yaml` by PyYAML's safe loader, whatever the document (the oracle of `kcost.inputs.plain_yaml`)."""
    # deferred: yaml: loaded only where used (start-up; tests/test_cli.py)
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "cannot parse"
        raise InputError(f"not valid YAML: {problem}", source=name, line=mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", source=name) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"cannot read this document: {type(exc).__name__}", source=name) from None
    finally:
        loader.dispose()
    lines: dict[tuple[object, ...], int] = {}
    if node is not None:
        try:
            _walk(node, (), lines, name, set())
        except RecursionError:
            raise InputError("cannot read this document: nested too deep", source=name) from None
    return data, lines


def _walk(node: Any, path: tuple[object, ...], lines: dict[tuple[object, ...], int], name: str, seen: set[int]
          ) -> None:  # fmt: skip
    # deferred: yaml: loaded only where used (start-up; tests/test_cli.py)
    import yaml

    lines[path] = node.start_mark.line + 1
    if id(node) in seen:  # an alias: its lines are known already, and walking it again could explode
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in keys:
                raise InputError(
                    "duplicate key",
                    source=name,
                    line=key_node.start_mark.line + 1,
                    field=format_loc((*path, key)),
                )
            keys.add(key)
            _walk(value_node, (*path, key), lines, name, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), lines, name, seen)
