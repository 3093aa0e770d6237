"""The compiled parts of kcost, built where a C compiler is at hand: the replay core of `kcost trace`
(kcost/fleet/_core.c), the scan of Claude Code logs (kcost/readers/_claude.c), the token estimate
(kcost/transcripts/_estimate.c), the prompt builder (kcost/transcripts/_builder.c), a calibration pass
(kcost/transcripts/_calibrate.c), the session simulator (kcost/cache/_session.c), a session's records made from the
rows a worker sends (kcost/_records.c) and a bill's turns written as JSON (kcost/_turns.c). Each is optional: where
one cannot be built, the install goes on and kcost does that work in Python (`kcost --version` names the engines)."""

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
        Extension(  # the token estimate of a rendered part (kcost/transcripts/_estimate.c): Python's otherwise
            "kcost.transcripts._estimate",
            ["kcost/transcripts/_estimate.c"],
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math"],
            optional=True,
        ),
        Extension(  # the prompt builder (kcost/transcripts/_builder.c): kcost.transcripts.prompts.Builder otherwise
            "kcost.transcripts._builder",
            ["kcost/transcripts/_builder.c"],
            depends=[SHARED],
            extra_compile_args=["-O3"],
            optional=True,
        ),
        Extension(  # a calibration pass (kcost/transcripts/_calibrate.c): kcost.transcripts.calibrate.Pass otherwise
            "kcost.transcripts._calibrate",
            ["kcost/transcripts/_calibrate.c"],
            depends=[SHARED],
            extra_compile_args=["-O3"],
            optional=True,
        ),
        Extension(  # the session simulator (kcost/cache/_session.c): kcost.cache.simulator.Simulator otherwise
            "kcost.cache._session",
            ["kcost/cache/_session.c"],
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math"],
            optional=True,
        ),
        Extension(  # a session's records made from rows (kcost/_records.c): kcost.session._from_rows otherwise
            "kcost._records",
            ["kcost/_records.c"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
        Extension(  # a bill's turns written as JSON (kcost/_turns.c): kcost.billing's loop otherwise
            "kcost._turns",
            ["kcost/_turns.c"],
            depends=[SHARED],
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math"],
            optional=True,
        ),
    ]
)
