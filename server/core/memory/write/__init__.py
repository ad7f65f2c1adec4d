"""The one change path: the writer, its merge policy and its write gate."""
