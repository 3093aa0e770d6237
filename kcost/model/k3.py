"""Kimi K3's own figures that the simulators and the reports share, written once: its hash block (and the ones
`k3:auto` tries) and the sizes its prefix cache takes in a serving pool (`docs/design/cache-model.md` section 1)."""

from __future__ import annotations

# K3 hashes prefixes in 512-token blocks (seed lesson, Figure 12 of the report: "fine 512-token hash blocks").
HASH_BLOCK = 512
# The block sizes `k3:auto` tries against a log's cached counts (`kcost.cache.fit`): powers of two around it,
# since a serving stack may hash in finer or coarser blocks than the report's (a real Kimi CLI log follows 256).
FIT_BLOCKS = (64, 128, 256, 512, 1024, 2048)
# MLA KV pages hold one hash block each.
MLA_BYTES_PER_TOKEN = 13_824  # 576 values x 24 MLA layers at FP8 (never x 93 layers: that overstates KV 3.9x)
KDA_CHECKPOINT_BYTES = 449_000_000  # 96 heads x 128 x 128 FP32 + conv state, x 69 KDA layers: about 449 MB
PAGE_BYTES = HASH_BLOCK * MLA_BYTES_PER_TOKEN  # one page holds one hash block of MLA KV: 7,077,888 bytes
