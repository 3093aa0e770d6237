"""The API wire schemes of the providers' usage records: the field names each count is under. A provider module
points at one of these (Moonshot, OpenAI and DeepSeek speak OpenAI's chat completions)."""

from __future__ import annotations

from kcost.pricing.providers.base import UsageFields

# prompt = `prompt_tokens` (cached included); cached = `cached_tokens` (Kimi, top level), else
# `prompt_tokens_details.cached_tokens` (OpenAI), else `prompt_cache_hit_tokens` (DeepSeek); output =
# `completion_tokens`; reasoning = `completion_tokens_details.reasoning_tokens`.
OPENAI = UsageFields(
    scheme="openai",
    layout="chat",
    prompt=("prompt_tokens",),
    cached=("cached_tokens", "prompt_tokens_details.cached_tokens", "prompt_cache_hit_tokens"),
    output="completion_tokens",
    reasoning="completion_tokens_details.reasoning_tokens",
    optional=frozenset({"completion_tokens"}),
)

# prompt = `input_tokens + cache_creation_input_tokens + cache_read_input_tokens`; cached =
# `cache_read_input_tokens`; written = `cache_creation_input_tokens`, of which kept an hour =
# `cache_creation.ephemeral_1h_input_tokens` (the rest, `ephemeral_5m_input_tokens`, 5 minutes; Claude Code logs
# the breakdown); output = `output_tokens`.
ANTHROPIC = UsageFields(
    scheme="anthropic",
    layout="flat",
    prompt=("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"),
    cached=("cache_read_input_tokens",),
    written="cache_creation_input_tokens",
    written_1h="cache_creation.ephemeral_1h_input_tokens",
    output="output_tokens",
    optional=frozenset({"cache_creation_input_tokens", "cache_read_input_tokens"}),
)
