"""Generated protobuf stubs: do not edit (make gen)."""
