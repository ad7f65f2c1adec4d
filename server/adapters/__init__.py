"""Implementations of the core's ports over SQLite, usearch, tantivy and onnxruntime."""
