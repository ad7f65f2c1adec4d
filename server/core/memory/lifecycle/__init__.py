"""How memory changes with time (seed 000 §2.4, §4.3; seed 001 §2.3, §4.1): session ends,
reconciliation, retention tier moves, expiry and topic compression, each a change through the
writer's one change path."""
