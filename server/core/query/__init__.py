"""The read path: plan, channels, scoring, early stop, hits."""
