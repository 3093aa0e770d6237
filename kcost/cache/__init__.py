"""The prefix-cache simulator, no I/O: cache models and their parameters (`model`), the block and checkpoint rules
they share (`rules`), one session's run through a cache (`simulator`), and a rule fitted to a session's logged hits
(`fit`)."""
