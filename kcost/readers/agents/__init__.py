"""One module per agent or log format kcost reads: where its logs live, how it records a call, and the calls it
makes of them. Each registers in `kcost.readers.registry`."""
