"""Multimodal memory: blobs, images, recordings and tables (seed 001 §2.2, §5.2)."""
