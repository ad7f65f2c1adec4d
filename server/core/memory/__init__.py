"""Memory: the tiered store, its change path, pockets and hybrid recall."""
