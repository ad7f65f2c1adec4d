"""Transport-free domain logic: the write gate, the hot tier, retrieval and the memory engine."""
