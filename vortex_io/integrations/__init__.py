"""Engine adapters (``polars_plugin``, ``duckdb_ext``). Each imports its engine lazily:
importing this package imports nothing heavy."""
