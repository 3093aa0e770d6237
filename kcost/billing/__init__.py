"""A session's bill: each call's simulated outcome priced, in `Decimal` (`bills`); bills made where their logs
are read, in worker processes or on a Dask cluster (`distributed`, `scheduler`)."""
