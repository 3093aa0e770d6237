"""The compiled parts of kcost, built where a C compiler is at hand: the replay core of `kcost trace`
(kcost/fleet/_core.c) and the scan of Claude Code logs (kcost/readers/_claude.c). Each is optional: where one cannot
be built, the install goes on and kcost does that work in Python (`kcost --version` names the engines)."""

from setuptools import Extension, setup

SHARED = "kcost/_compiled.h"  # what the compiled parts share: growing arrays, slotted instances, interned names

setup(
    ext_modules=[
        Extension(
            "kcost.fleet._core",
            ["kcost/fleet/_core.c"],
            # the same floating-point operations as the Python engine, in the same order: no contraction to FMA
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math", "-pthread"],
            extra_link_args=["-pthread"],
            optional=True,
        ),
        Extension(  # the compiled scan of Claude Code logs (kcost/readers/_claude.c): the Python reader otherwise
            "kcost.readers._claude",
            ["kcost/readers/_claude.c"],
            depends=[SHARED],
            extra_compile_args=["-O3"],
            optional=True,
        ),
    ]
)
