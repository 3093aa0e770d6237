"""A fleet serving request traces: trace files and their requests (`requests`), the paged pool (`pool`), one
cluster's cache (`cluster`), placement and failover (`routing`), the prefill queues and times to first token
(`prefill`), what a run is asked (`spec`), the replay in Python (`replay`) and compiled (`core`), where it runs
(`engines`), and the report of a run (`run`)."""
