"""The followers of the change feed: the metadata columns, the hot tier, the background indexer,
access statistics and the maintenance thread."""
