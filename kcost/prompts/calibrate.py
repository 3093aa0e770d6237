"""Logged usage -> the size of every part of every prompt, and the simulator's requests.

Logged facts win: every call whose usage was logged gets a prompt of exactly the logged size. What the log
does not hold is sized from what it does:

- the **unlogged prefix** (a system prompt or tool list the log leaves out: part 0 of the prompt) is sized at
  the first logged call that carries it: the logged prompt less the rest of the prompt at its estimates. It
  stays for the session unless a later call proves it changed (the same prompt sent again at another logged
  size): then it is a new prefix, and a prefix change like any other. Each agent's calls name their own;
- the **parts a logged call adds** share out what its logged size adds to the parts already sized: the
  previous reply sent back takes its logged output tokens (less reasoning not passed back), the rest is split
  in proportion to the estimates (integers, largest remainder);
- a call **without** logged usage keeps the tokenizer's or the estimate's sizes, scaled by the session's
  measured ratio of logged to estimated tokens (measured only where a logged call adds to a logged prompt
  sized whole, and bounded to 1/8 to 8; a session with no logged usage is sized as estimated).

Where a logged size contradicts the structure (a prompt smaller than the parts earlier calls already sized, or
larger with nothing new to hold the difference), the request is cut or extended to the logged size and a note
names the call. Two passes, each costing what the calls add, not what they re-send: the first measures the
ratio and the prefixes, the second sizes every part with both known from the start and builds the requests.
Where the first sized every part as the second would (no part sized by a scaled estimate, or a ratio of 1, and
each prefix at a call whose new parts the second would share out at their estimates: `Pass.as_last`), the
first builds the requests and the second is not walked (most logs whose every call logs its usage).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction

from kcost.model.calls import Usage
from kcost.model.causes import Cause, Change
from kcost.model.frozen import frozen
from kcost.model.requests import Request, Span


@frozen(slots=True)
class Shape:
    """One call's prompt as parts, relative to the previous call's: what calibration sizes.

    `keep` parts of the previous prompt stay at the front and `new` follow (the generation prompt included).
    `turn` is the part where the newest turn starts; `reply` the part that is the previous call's reply sent
    back, and `reply_tokens` what the log says it cost (its output, less reasoning not passed back); `output`
    this call's own reply. `prefix` names the unlogged part at the front (part 0), if the log leaves one out.
    """

    keep: int
    new: tuple[int, ...]
    turn: int
    reply: int | None
    reply_tokens: int | None
    output: int | None
    usage: Usage | None
    time: float
    prefix: str | None
    change: Change | None
    line: int | None


@frozen
class Sized:
    """The requests, how each one's sizes were found, and what the log contradicted."""

    requests: tuple[Request, ...]
    changes: tuple[Change | None, ...]
    logged: int  # calls sized from their logged usage
    estimated: int  # calls sized by the tokenizer or the estimate, scaled
    notes: tuple[str, ...]
    token_counts: str


def calibrate(shapes: Sequence[Shape], estimates: list[int], counter: str) -> Sized:
    """Size every part of `shapes` (structure from `prompts`) and build the requests; `estimates` holds each
    part's estimate by id, `counter` says where the estimates come from."""
    # with no logged call there is nothing to measure: the ratio is 1 and no prefix is sized
    first, requests = _walk(shapes, estimates, Fraction(1), None) if any(s.usage for s in shapes) else (None, [])
    ratio = first.ratio() if first else Fraction(1)
    if first is not None and first.as_last(ratio):
        final = first
    else:  # every part sized with the ratio and the prefixes (each its first logged call less the estimated
        # messages) known from the start
        final, requests = _walk(shapes, estimates, ratio, dict(first.prefix_sizes) if first else {})
    notes = list(final.notes)
    for name, size in final.prefix_sizes.items():
        notes.append(f"{name} not in the log: sized from the logged usage at {size:,} tokens")
    for name in final.unsized:
        notes.append(f"{name} not in the log, and no call logged usage to size them by: not counted")
    measured = first.measured() if first else None
    if final.estimated and measured is not None and measured != ratio:
        # the bound binds: the estimated calls' sizes rest on a ratio the log does not bear out
        notes.append(f"the session's ratio of logged to estimated tokens is {_ratio_text(measured)}, past the "
                     f"bound of {_ratio_text(ratio)}: the {final.estimated} call(s) without logged usage are sized "
                     f"by {counter} {_ratio_text(ratio)}, and may be far off")  # fmt: skip
    elif final.logged and final.estimated and ratio != 1:
        notes.append(f"{final.estimated} call(s) without logged usage sized by {counter} x {float(ratio):.3g}, "
                     "the session's ratio of logged to estimated tokens")  # fmt: skip
    assert all(r is not None for r in requests)
    return Sized(
        requests=tuple(r for r in requests if r is not None),
        changes=tuple(final.changes),
        logged=final.logged,
        estimated=final.estimated,
        notes=tuple(notes),
        token_counts=_counts_text(final.logged, final.estimated, counter, ratio),
    )


def _walk(shapes: Sequence[Shape], estimates: list[int], ratio: Fraction, prefixes: dict[str, int] | None
          ) -> tuple[Pass, list[Request | None]]:  # fmt: skip
    """One pass over every shape, the last pass's way (each call's change and request kept): the pass, with what
    it found, and the requests."""
    walked = Pass(estimates, ratio, prefixes)
    return walked, [walked.step(shape, emit=True) for shape in shapes]


def prefix_changed(name: str, room: int) -> Change:
    """The change of a call whose logged size says its unlogged prefix changed, by `room` tokens."""
    return Change(Cause.UNLOGGED_PREFIX_CHANGED, f"the logged size says the {name} changed ({room:+,} tokens)")


def _counts_text(logged: int, estimated: int, counter: str, ratio: Fraction) -> str:
    scaled = f"{counter}, scaled x{float(ratio):.3g}" if ratio != 1 else counter
    if logged and not estimated:
        return f"logged usage ({_calls(logged)})"
    if logged:
        return f"logged usage ({_calls(logged)}), else {scaled} ({_calls(estimated)})"
    return counter


def _contradicted(logged: int, rendered: int) -> str:
    if logged < rendered:
        return f"logged prompt of {logged:,} tokens is smaller than the {rendered:,} its parts were sized at"
    return f"logged prompt of {logged:,} tokens is larger than its {rendered:,}, with nothing new to hold it"


def _ratio_text(ratio: Fraction) -> str:
    return f"x{float(ratio):.3g}" if ratio >= 1 else f"1/{float(1 / ratio):.3g}"


def _calls(n: int) -> str:
    return f"{n} call" if n == 1 else f"{n} calls"


RATIO_BOUND = Fraction(8)


class Pass:
    """One walk over the shapes: the current prompt's parts, their positions, and every part's size."""

    def __init__(self, estimates: list[int], ratio: Fraction, prefixes: dict[str, int] | None) -> None:
        self.est = estimates
        self.scale = ratio
        self.given = prefixes  # the prefix sizes the first pass found (None: this is the first pass)
        self.tokens: dict[int, int] = {}
        self.segs: list[int] = []
        self.ends: list[int] = []  # token position after each part, the unlogged prefix counted as 0
        self.prefix_seg: dict[str, int] = {}  # a prefix's name -> the part that stands for it now
        self.prefix_sizes: dict[str, int] = {}  # as first found
        self.unsized: list[str] = []  # prefixes no logged call could size
        self.fresh = len(estimates)  # ids for parts calibration makes (a changed prefix, a correction)
        self.sent = 0  # the previous request's prompt length
        self.calls = self.logged = self.estimated = 0
        self.shared_tokens = self.shared_estimates = 0
        self.changes: list[Change | None] = []
        # what the notes tell of, in order: ("contradiction" | "zero", call index, line, logged, rendered)
        self.events: list[tuple[str, int, int | None, int, int]] = []
        self.exact = False  # the previous prompt was logged, and its parts add up to the logged size
        self.previous_parts = 0
        # what tells a first pass from the last (`as_last`): parts sized by a scaled estimate, and whether a
        # prefix was sized otherwise than the last pass, knowing it from the start, would size it
        self.scaled_parts = 0
        self.prefix_apart = False

    # ---- sizes -----------------------------------------------------------------------------------------

    def scaled(self, seg: int) -> int:
        e = self.est[seg] if seg < len(self.est) else 0
        self.scaled_parts += e != 0
        if self.scale == 1:
            return e
        return int(e * self.scale + Fraction(1, 2))

    def measured(self) -> Fraction | None:
        """The ratio as measured, before `ratio` bounds it; None where nothing was measured."""
        if self.shared_estimates <= 0 or self.shared_tokens <= 0:
            return None
        return Fraction(self.shared_tokens, self.shared_estimates)

    def as_last(self, ratio: Fraction) -> bool:
        """Whether this first pass (ratio 1, no prefix known) sized every part as the last pass, under `ratio`
        and knowing the prefixes it found from the start, would: no part it sized by a scaled estimate but at a
        ratio of 1, and each prefix sized at a logged call where the last pass's share of what that call adds
        gives each new part its estimate (every estimate at least 1, no reply among them, a prefix of 0 or more).
        Then the last pass would walk the same sizes to the same requests, and is not walked."""
        return self.given is None and not self.prefix_apart and (ratio == 1 or not self.scaled_parts)

    def ratio(self) -> Fraction:
        """Logged tokens per estimated token, over what logged calls added on top of logged sizes only; 1 where
        nothing was measured, and never past `RATIO_BOUND` either way (past it the estimate says nothing)."""
        if self.shared_estimates <= 0 or self.shared_tokens <= 0:
            return Fraction(1)
        return min(max(Fraction(self.shared_tokens, self.shared_estimates), 1 / RATIO_BOUND), RATIO_BOUND)

    # ---- one call ------------------------------------------------------------------------------------

    def step(self, sh: Shape, *, emit: bool = False) -> Request | None:
        """One call through this pass: its parts laid after what it keeps, the new ones sized, their positions;
        with `emit` (the last pass), its change and its request."""
        index = self.calls
        self.calls += 1
        keep = self._lay(sh)
        prefix_known = self._known_prefix(sh.prefix)
        unknown = self._new_parts(keep, sh.prefix)
        changed = sh.change
        length: int | None = None  # the prompt's length, where the log fixes it
        if sh.usage is None:
            self.estimated += 1
            self.prefix_apart |= not prefix_known  # the last pass gives it its size from here on
            self._estimate(unknown)
        else:
            self.logged += 1
            length = sh.usage.prompt
            if sh.prefix is not None and not prefix_known:  # the first logged call that carries this prefix
                reply = self.segs[sh.reply] if sh.reply is not None and sh.reply < len(self.segs) else None
                self.prefix_apart |= sh.reply_tokens is not None and reply in unknown
                self._size_prefix(sh.prefix, unknown, length - self._fixed(keep, sh.prefix))
            else:
                resized = self._fill(sh, keep, unknown, length)
                if resized is not None:
                    keep, changed = 0, resized
        prefix, rendered = self._positions(sh.prefix)
        self.exact = length is not None and length == rendered  # a logged prompt, sized whole
        if length is None:
            length = rendered
        elif length != rendered:
            self._contradiction(index, sh.line, length, rendered)
        if not emit:
            return None
        self.changes.append(changed)
        if length < 1:
            self._zero_prompt(index)
        return self._request(sh, keep, prefix, rendered, max(length, 1))

    def _lay(self, sh: Shape) -> int:
        """The call's parts: the previous prompt's first `keep`, then the new ones, the unlogged prefix (part 0)
        standing for its name's current part. Returns `keep`."""
        segs = self.segs
        self.previous_parts = len(segs)
        keep = min(sh.keep, len(segs))
        del segs[keep:], self.ends[keep:]
        segs.extend(sh.new)
        name = sh.prefix
        if name is not None:
            if name not in self.prefix_seg:
                self.prefix_seg[name] = segs[0]
            segs[0] = self.prefix_seg[name]
        return keep

    def _known_prefix(self, name: str | None) -> bool:
        """Whether the call's unlogged prefix (if any) has a size. The last pass knows every prefix from the
        start: one no logged call sized is not counted."""
        if name is None:
            return True
        tokens, part = self.tokens, self.segs[0]
        if part in tokens:
            return True
        if self.given is None:
            return False
        tokens[part] = self.given.get(name, 0)
        if name in self.given:
            self.prefix_sizes.setdefault(name, tokens[part])
        else:
            self.unsized.append(name)
        return True

    def _new_parts(self, keep: int, name: str | None) -> list[int]:
        """The parts new to this call beyond the prefix that are still unsized; a part that recurs within one
        prompt is given its (scaled) estimate at once."""
        tokens = self.tokens
        new = [s for s in self.segs[max(keep, 1 if name else 0) :] if s not in tokens]
        if len(set(new)) == len(new):  # the common case: none recurs
            return new
        fresh = Counter(new)
        for s, times in fresh.items():
            if times > 1:
                tokens[s] = self.scaled(s)
        return [s for s in fresh if s not in tokens]

    def _estimate(self, parts: list[int]) -> None:
        for s in parts:
            self.tokens[s] = self.scaled(s)

    def _fixed(self, keep: int, name: str | None) -> int:
        """Tokens of the prompt already sized, the prefix left out: the kept parts and the new ones with a size."""
        tokens = self.tokens
        base = self.ends[keep - 1] if keep else 0
        start = 1 if name is not None else 0
        return base + sum(tokens[s] for s in self.segs[max(keep, start) :] if s in tokens)

    def _size_prefix(self, name: str, unknown: list[int], room: int) -> None:
        """The first logged call carrying prefix `name`: the prefix is the `room` the logged prompt leaves beyond
        the sized parts, less the new parts at their estimates; where the new parts alone come to more than the
        room, there is no prefix and they share the room."""
        scaled = self.scaled_parts  # at a ratio of 1: the last pass shares the room these estimates leave
        prefix = room - sum(self.scaled(s) for s in unknown)
        if prefix >= 0:
            self._estimate(unknown)
            self.scaled_parts = scaled
            self.prefix_apart |= any(self.est[s] < 1 if s < len(self.est) else True for s in unknown)
        else:
            prefix = 0
            self._share(unknown, room, None, None, clean=False)
            self.prefix_apart = True
        self.tokens[self.segs[0]] = prefix
        self.prefix_sizes.setdefault(name, prefix)

    def _fill(self, sh: Shape, keep: int, unknown: list[int], length: int) -> Change | None:
        """A logged call: the new parts share what its logged `length` adds. Where nothing is new and the size
        differs, only the part the log leaves out can have changed: it becomes a new part, and the change is
        returned (the call then keeps nothing of the previous prompt)."""
        name, segs, tokens = sh.prefix, self.segs, self.tokens
        prefix = tokens[segs[0]] if name is not None else 0
        room = length - prefix - self._fixed(keep, name)
        if unknown and room >= 0:
            reply = segs[sh.reply] if sh.reply is not None and sh.reply < len(segs) else None
            # the ratio is measured only where the rest of the prompt is a logged prompt, whole: then the room is
            # exactly what this call added
            clean = self.exact and keep >= self.previous_parts - 1
            self._share(unknown, room, reply, sh.reply_tokens, clean=clean)
        elif unknown:
            self._estimate(unknown)
        elif room and name is not None and prefix + room >= 0 and len(segs) - keep <= 1:
            # the same prompt sent again (at most the closing generation prompt is new) at another size
            seg = self.fresh
            self.fresh += 1
            self.prefix_seg[name] = segs[0] = seg
            tokens[seg] = prefix + room
            return prefix_changed(name, room)
        return None

    def _positions(self, name: str | None) -> tuple[int, int]:
        """Where each new part ends (the unlogged prefix counted as 0); returns the prefix's size and the prompt's
        rendered length."""
        ends, segs, tokens = self.ends, self.segs, self.tokens
        for i in range(len(ends), len(segs)):
            ends.append((ends[i - 1] if i else 0) + (0 if i == 0 and name is not None else tokens[segs[i]]))
        prefix = tokens.get(segs[0], 0) if name is not None else 0
        return prefix, prefix + ends[-1] if ends else prefix

    def _zero_prompt(self, index: int) -> None:
        self.events.append(("zero", index, None, 0, 0))

    def _share(
        self, unknown: list[int], room: int, reply: int | None, reply_tokens: int | None, *, clean: bool
    ) -> None:
        """Give the `unknown` parts `room` tokens (room >= 0): the reply its logged size where it fits, the rest
        in proportion to their estimates. `clean`: the room is all new tokens, so it measures the ratio."""
        tokens = self.tokens
        if room < 0:  # nothing to share: the contradiction is named, and the parts keep their estimates
            for s in unknown:
                tokens[s] = self.scaled(s)
            return
        if reply is not None and reply_tokens is not None and reply in unknown:
            others = len(unknown) - 1
            if room - others >= 0:
                tokens[reply] = min(reply_tokens, room - others)
                room -= tokens[reply]
                unknown = [s for s in unknown if s != reply]
        if not unknown:
            return
        weights = [max(self.est[s] if s < len(self.est) else 0, 1) for s in unknown]
        whole = sum(weights)
        shares = [room * w // whole for w in weights]
        order = sorted(range(len(unknown)), key=lambda i: (-(room * weights[i] % whole), i))
        for i in order[: room - sum(shares)]:
            shares[i] += 1
        for s, n in zip(unknown, shares, strict=True):
            tokens[s] = n
        if clean:
            self.shared_tokens += room
            self.shared_estimates += sum(self.est[s] if s < len(self.est) else 0 for s in unknown)

    def _contradiction(self, index: int, line: int | None, logged: int, rendered: int) -> None:
        self.events.append(("contradiction", index, line, logged, rendered))

    @property
    def notes(self) -> list[str]:
        """What the pass met that a note names: the first call whose logged size contradicts its rebuilt prompt
        (and that there were more), the first call that logged a prompt of 0 tokens."""
        notes: list[str] = []
        contradictions = zeros = 0
        for kind, index, line, logged, rendered in self.events:
            if kind == "zero":
                zeros += 1
                if zeros == 1:
                    notes.append(f"call {index + 1} logged a prompt of 0 tokens: simulated as 1 (every request "
                                 "computes one token)")  # fmt: skip
                continue
            contradictions += 1
            if contradictions == 1:
                where = f"call {index + 1}" + (f" (line {line})" if line is not None else "")
                notes.append(f"{where}: {_contradicted(logged, rendered)}; billed at the logged size")
            elif contradictions == 2:
                notes.append("more calls whose logged size contradicts the rebuilt prompt: billed at the logged size")
        return notes

    # ---- the request ----------------------------------------------------------------------------------

    def _request(self, sh: Shape, keep: int, prefix: int, rendered: int, length: int) -> Request:
        def position(i: int) -> int:  # where part i ends
            return prefix + self.ends[i]

        keep_tokens = min(position(keep - 1), self.sent, length) if keep else 0
        stop = min(rendered, length)
        append: list[Span] = []
        q = keep_tokens
        i = bisect_right(self.ends, q - prefix)  # the part that holds token q
        while q < stop and i < len(self.segs):
            lo = position(i - 1) if i else 0
            hi = min(position(i), stop)
            if hi > q:
                append.append(Span(self.segs[i], q - lo, hi - q))
                q = hi
            i += 1
        if length > rendered:  # tokens the log counts and the rebuilt prompt does not hold
            append.append(Span(self.fresh, 0, length - rendered))
            self.fresh += 1
        turn = min(position(sh.turn - 1) if sh.turn else 0, length)
        resent = None
        if sh.reply is not None and sh.reply < len(self.segs):
            lo, hi = position(sh.reply - 1), min(position(sh.reply), length)
            resent = (lo, hi) if lo < hi else None
        output: tuple[Span, ...] = ()
        if sh.output is not None:
            size = self.tokens.get(sh.output)
            if size is None:
                size = sh.usage.output if sh.usage is not None else self.scaled(sh.output)
            output = (Span(sh.output, 0, size),) if size else ()
        self.sent = length
        return Request(
            time=sh.time,
            keep=keep_tokens,
            append=tuple(append),
            turn_start=turn,
            output=output,
            resent_output=resent,
            output_tokens=sh.usage.output if sh.usage is not None else None,
        )
