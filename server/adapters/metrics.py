"""The `Metrics` port on prometheus-client: counters and histograms in a registry of the
server's own (so that several servers in one process never collide), gauges read when scraped,
and the `/metrics` endpoint on its own port (`server.metrics_listen`).

The names follow Prometheus' conventions: `pocketd_calls_total{method,tenant,code}`,
`pocketd_call_seconds{method,tenant}`, `pocketd_recall_pockets{tenant}`,
`pocketd_recall_cost_units{tenant}`, `pocketd_router_decisions_total{asked,ran,widened}`,
`pocketd_ledger_reservations_total{tenant,outcome}`, and one gauge per `gauge()` call. A call
that no token authenticated has the tenant label "-".
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

# Call latency buckets, in seconds: a Recall answers in about a millisecond, a Step in tens,
# a RememberBatch or an overloaded call in seconds.
CALL_BUCKETS = (
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip
POCKET_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
COST_BUCKETS = (1e2, 1e3, 1e4, 3e4, 1e5, 3e5, 1e6, 1e7)


class _Gauges(Collector):  # type: ignore[misc]
    """The values read at scrape time; one that fails to read is left out of that scrape."""

    def __init__(self) -> None:
        self._reads: dict[str, tuple[str, Callable[[], float]]] = {}
        self._lock = threading.Lock()

    def add(self, name: str, doc: str, read: Callable[[], float]) -> None:
        with self._lock:
            self._reads[name] = (doc, read)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._lock:
            reads = list(self._reads.items())
        for name, (doc, read) in reads:
            try:
                value = float(read())
            except Exception:  # a part not open yet (catching up) or closed: no sample
                continue
            yield GaugeMetricFamily(name, doc, value=value)


class PrometheusMetrics:
    """Implements `server.core.metrics.Metrics`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self._calls = Counter(
            "pocketd_calls", "RPCs by method, tenant and status code", ["method", "tenant", "code"],
            registry=r,
        )  # fmt: skip
        self._seconds = Histogram(
            "pocketd_call_seconds", "RPC latency in the server, by method and tenant",
            ["method", "tenant"], buckets=CALL_BUCKETS, registry=r,
        )  # fmt: skip
        self._pockets = Histogram(
            "pocketd_recall_pockets", "Pockets a Recall's plan searched", ["tenant"],
            buckets=POCKET_BUCKETS, registry=r,
        )  # fmt: skip
        self._cost = Histogram(
            "pocketd_recall_cost_units", "A Recall's cost in cost units (one exact 384-d dot"
            " product each), keyword search included", ["tenant"], buckets=COST_BUCKETS,
            registry=r,
        )  # fmt: skip
        self._decisions = Counter(
            "pocketd_router_decisions", "Routed Recalls by the policy asked for, the policy"
            " whose plan ran, and whether the safety net widened it", ["asked", "ran", "widened"],
            registry=r,
        )  # fmt: skip
        self._reservations = Counter(
            "pocketd_ledger_reservations", "Ledger reservations: granted, or refused by a limit"
            " (total, round, rounds, tool, final)", ["tenant", "outcome"], registry=r,
        )  # fmt: skip
        self._gauges = _Gauges()
        r.register(self._gauges)
        self._server: Any = None

    def call(self, method: str, tenant: str, code: str, seconds: float) -> None:
        t = tenant or "-"
        self._calls.labels(method, t, code).inc()
        self._seconds.labels(method, t).observe(seconds)

    def recall(self, tenant: str, pockets: int, cost_units: float) -> None:
        self._pockets.labels(tenant).observe(pockets)
        self._cost.labels(tenant).observe(cost_units)

    def decision(self, asked: str, ran: str, widened: bool) -> None:
        self._decisions.labels(asked, ran, "true" if widened else "false").inc()

    def reservation(self, tenant: str, refused_by: str) -> None:
        outcome = "granted" if not refused_by else "refused_" + refused_by.split(":", 1)[0]
        self._reservations.labels(tenant, outcome).inc()

    def gauge(self, name: str, doc: str, read: Callable[[], float]) -> None:
        self._gauges.add(name, doc, read)

    def serve(self, listen: str) -> int:
        """Serve `/metrics` over HTTP on `listen` (host:port; port 0: any free one) on a thread
        of its own; return the bound port."""
        host, _, port = listen.rpartition(":")
        server, _thread = start_http_server(int(port), host.strip("[]"), registry=self.registry)
        self._server = server
        return int(server.server_address[1])

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
