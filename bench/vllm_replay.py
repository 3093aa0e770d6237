"""kcost's K3 rule beside a real engine's cache manager: vLLM's hybrid KV cache manager (full attention + a
linear-attention state group in "align" mode, as K3's MLA + KDA), driven on the CPU with no model, replaying the
same sessions token for token. Prints, per session, the requests on which the two agree on the hit tokens, and
each request on which they differ.

    python bench/vllm_replay.py                    # the shipped samples and 4 generated Claude Code sessions
    python bench/vllm_replay.py PATH... --mtp      # with speculative decoding (vLLM's EAGLE/MTP block drop)

vLLM is not a kcost dependency: the script says so and exits 0 where it is not installed. The one used here
(0.33.0) ran from its PyPI wheel in a separate environment, beside the CPU build of torch (`pip install
torch==2.13.0`, then `pip install --no-deps vllm==0.33.0` and the handful of modules its cache manager imports).

What is compared. Each session's requests as kcost rebuilds them (`Request.keep` of the previous prompt, then the
spans it appends), each span's tokens given ids from its identity, so two prompts share exactly the prefix kcost
says they share. vLLM's side: one `KVCacheManager` (block 512 = K3's hash block, pool large enough never to evict,
`prefix_cache_retention_interval=0`, the engine's default: the linear state kept only at semantic checkpoints),
each request looked up (`get_computed_blocks`, its shared-prefix junction handed on as the scheduler does), then
prefilled in the chunks the scheduler cuts for align mode (`Scheduler._mamba_block_aligned_split`: a chunk ends at
the prompt's checkpoint, `get_mamba_prefill_checkpoint_position`, and at the junction, where the state is cached),
then freed; no output is decoded (K3's rule with `output=off`: no state is kept inside an output). kcost's side:
`k3:ttl=inf,output=off` (with `--mtp`, `mtp=on`: vLLM's `use_eagle` block drop), vLLM keeping no lifetime.

Where they differ: kcost keeps a checkpoint where each request's newest turn starts from that request on; vLLM
keeps one there only once a later request diverges at it (the junction). A prefix first reused up to an earlier
turn's start (a turn sent again with a different newest message) hits one request earlier in kcost.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BLOCK = 512


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="sessions kcost reads (default: sample_sessions/ and generated)")
    parser.add_argument("--generated", type=int, default=3, help="generated Claude Code sessions (default 3)")
    parser.add_argument("--mtp", action="store_true", help="speculative decoding: vLLM's EAGLE block drop")
    args = parser.parse_args(argv)
    try:
        engine = Engine(args.mtp)
    except ImportError as exc:
        print(f"vLLM is not installed here ({exc.name}): nothing to compare. See this script's docstring.")
        return 0
    from kcost import api
    from kcost.api.settings import Settings
    from kcost.cache.model import parse_cache_model
    from kcost.cache.simulator import simulate

    model = parse_cache_model("k3:ttl=inf,output=off" + (",mtp=on" if args.mtp else ""))
    with tempfile.TemporaryDirectory() as tmp:
        paths = list(args.paths) or [str(ROOT / "sample_sessions"), *generated(Path(tmp), args.generated)]
        agree = total = 0
        for session in api.sessions(paths, Settings(usage="simulated")):
            requests = [*session.warmup, *(r.request for r in session.records if r.request is not None)]
            kcost = [o.hit for o in simulate(requests, model)]
            vllm = [hit for hit, request in zip(engine.replay(requests), requests, strict=True) if request.billed]
            same = sum(a == b for a, b in zip(kcost, vllm, strict=True))
            agree, total = agree + same, total + len(kcost)
            tokens = sum(len_of(r) for r in prompts(requests))
            print(f"{session.name}: {same} of {len(kcost)} requests agree ({tokens:,} prompt tokens)")
            for i, (a, b) in enumerate(zip(kcost, vllm, strict=True), 1):
                if a != b:
                    print(f"  request {i}: kcost {a:,} hit tokens, vLLM {b:,}")
        vllm = "vLLM" + (" with EAGLE/MTP" if args.mtp else "")
        print(f"all: {agree} of {total} requests agree, kcost under {model.label}, {vllm}")
    return 0


class Engine:
    """vLLM's KV cache manager for a hybrid model, driven as its scheduler drives it, with no model."""

    def __init__(self, mtp: bool) -> None:
        import torch
        from vllm.utils.hashing import sha256
        from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash

        init_none_hash(sha256)
        self.torch, self.mtp = torch, mtp
        self.hasher = get_request_block_hasher(BLOCK, sha256)
        self.ids: dict[object, int] = {}

    def manager(self, blocks: int) -> object:
        from vllm.v1.core.kv_cache_manager import KVCacheManager
        from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec, MambaSpec

        f32 = self.torch.float32
        config = KVCacheConfig(
            num_blocks=blocks,
            kv_cache_tensors=[],
            kv_cache_groups=[
                KVCacheGroupSpec(["mla"], FullAttentionSpec(block_size=BLOCK, num_kv_heads=1, head_size=1, dtype=f32)),
                KVCacheGroupSpec(["kda"], MambaSpec(block_size=BLOCK, shapes=((1,),), dtypes=(f32,),
                                                    mamba_cache_mode="align")),
            ],
            prefix_cache_retention_interval=0,
        )  # fmt: skip
        return KVCacheManager(config, max_model_len=1 << 24, scheduler_block_size=BLOCK, hash_block_size=BLOCK,
                              enable_caching=True, use_eagle=self.mtp)  # fmt: skip

    def replay(self, requests: list[object]) -> Iterator[int]:
        """The hit tokens vLLM gives each request, in order."""
        from vllm.sampling_params import SamplingParams
        from vllm.v1.kv_cache_interface import get_mamba_prefill_checkpoint_position
        from vllm.v1.request import Request

        full = list(prompts(requests))
        new = sum(len_of(p) for p in full)
        manager = self.manager(new // BLOCK * 3 + 4096)  # room for every block ever computed: nothing evicted
        for n, spans in enumerate(full):
            ids = [self.token(span.seg, span.start + i) for span in spans for i in range(span.length)]
            request = Request(request_id=str(n), prompt_token_ids=ids, sampling_params=SamplingParams(max_tokens=1),
                              pooling_params=None, block_hasher=self.hasher)  # fmt: skip
            blocks, hit, junction = manager.get_computed_blocks(request)  # type: ignore[attr-defined]
            request.shared_prefix_boundary = junction  # as the scheduler hands it on
            last = get_mamba_prefill_checkpoint_position(len(ids), BLOCK, self.mtp)
            stops = sorted({s for s in (last, junction // BLOCK * BLOCK) if hit < s < len(ids)} | {len(ids)})
            start = hit
            for i, stop in enumerate(stops):
                if i == 0:
                    manager.allocate_slots(request, stop - start, hit, blocks)  # type: ignore[attr-defined]
                else:
                    manager.allocate_slots(request, stop - start)  # type: ignore[attr-defined]
                request.num_computed_tokens = stop
                manager.new_step_starts()  # type: ignore[attr-defined]
                start = stop
            manager.free(request)  # type: ignore[attr-defined]
            yield hit

    def token(self, seg: object, at: int) -> int:
        """A token id for token `at` of the run `seg`: the same run and place, the same id."""
        base = self.ids.setdefault(seg, len(self.ids) << 24)
        return (base + at) & 0x7FFFFFFF


def prompts(requests: list[object]) -> Iterator[list[object]]:
    """Each request's whole prompt as spans: the previous one's first `keep` tokens, then what it appends."""
    from kcost.model.requests import Span

    current: list[Span] = []
    for request in requests:
        kept, left = [], request.keep  # type: ignore[attr-defined]
        for span in current:
            if left <= 0:
                break
            kept.append(span if span.length <= left else Span(span.seg, span.start, left))
            left -= span.length
        current = [*kept, *request.append]  # type: ignore[attr-defined]
        yield current


def len_of(spans: list[object]) -> int:
    return sum(s.length for s in spans)  # type: ignore[attr-defined]


def generated(folder: Path, sessions: int) -> list[str]:
    """Claude Code logs as Claude Code writes them (`tests/claude_logs.py`), seeded: each a session of 20 to 120
    calls over an unlogged system prompt, with idle gaps and compaction; and one whose five Task sub-agents ran at
    once, their calls interleaved in the parent's file (six conversations sharing one cache)."""
    import random

    from tests.claude_logs import Corpus, parallel_session, write_session

    rng = random.Random(46)
    corpus = Corpus(rng)
    out = []
    for i in range(sessions):
        path = folder / f"generated-{i + 1}.jsonl"
        write_session(path, "/home/dev/project", f"00000000-0000-4000-8000-{i:012d}", rng.randint(20, 120),
                      1.77e9 + i * 86_400, rng, corpus)  # fmt: skip
        out.append(str(path))
    (folder / "parallel").mkdir()
    out.append(str(parallel_session(folder / "parallel", 5)))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
