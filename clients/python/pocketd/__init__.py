"""pocketd's Python client. `from pocketd import Client, AsyncClient`."""
