"""kcost's one compiled part, built where a C compiler is at hand: the replay core of `kcost trace`
(kcost/fleet/_core.c). It is optional: where it cannot be built, the install goes on and kcost replays traces in
Python (`kcost --version` names the engine)."""

from setuptools import Extension, setup

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
    ]
)
