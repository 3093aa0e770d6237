"""kcost: what a Kimi K3 session will cost, what it cost, and why.

The library surface is `read -> simulate -> price -> render`: `kcost.readers` turns input into sessions,
`kcost.cache` simulates K3's prefix cache, `kcost.billing` prices the outcomes, `kcost.render` writes them.
Nothing heavy is imported here, so `kcost --version` stays fast.
"""

__version__ = "0.1.0"
