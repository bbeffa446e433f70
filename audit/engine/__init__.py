"""Stage results from exact, mergeable counts instead of rows: what an engine that scanned every
row (the service's Dask engine) hands the pipeline beside its samples."""
