"""TLS and mTLS from config, with certificates the test makes (openssl), and the rule that a
server without tokens listens only on loopback unless told otherwise."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import grpc
import msgspec
import pytest

from pocketd.requests import Tls, open_channel
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.api.server import AGENT_NAME, LEDGER_NAME, SERVICE_NAME
from server.config import ConfigError, check
from server.core.settings import ServerSettings, Settings, TlsSettings
from tests.conftest import load_tool, make_settings, start_server, stop_server
from tests.security.conftest import VICTIM, with_tokens

needs_openssl = pytest.mark.skipif(
    shutil.which("openssl") is None,
    reason="the openssl command makes the test certificates (.ci/run installs it)",
)


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_pki(d: Path) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate."""
    p = {n: d / n for n in ("ca.key", "ca.pem", "srv.key", "srv.pem", "cli.key", "cli.pem")}
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(p["ca.key"]),
             "-out", str(p["ca.pem"]), "-days", "2", "-subj", "/CN=pocketd test CA")  # fmt: skip
    ext = d / "san.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for who, cn in (("srv", "localhost"), ("cli", "client")):
        csr = d / f"{who}.csr"
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(p[f"{who}.key"]),
                 "-out", str(csr), "-subj", f"/CN={cn}")  # fmt: skip
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(p["ca.pem"]), "-CAkey",
                 str(p["ca.key"]), "-CAcreateserial", "-out", str(p[f"{who}.pem"]), "-days", "2",
                 "-extfile", str(ext))  # fmt: skip
    return p


def tls_settings(data: Path, p: dict[str, Path], mutual: bool) -> Settings:
    """A server with the test's tokens over TLS (mTLS: clients need a certificate of the CA)."""
    tls = TlsSettings(
        cert_file=str(p["srv.pem"]),
        key_file=str(p["srv.key"]),
        client_ca_file=str(p["ca.pem"]) if mutual else "",
    )
    return msgspec.structs.replace(with_tokens(make_settings(data)), tls=tls)


async def _stats(target: str, tls: Tls | None, token: str | None = VICTIM) -> spb.StatsResponse:
    ch = open_channel(target, 1 << 20, token, tls, sync=False)
    try:
        stub = spb_grpc.MemoryServiceStub(ch)
        return await stub.Stats(spb.StatsRequest(), timeout=60)
    finally:
        await ch.close()


@needs_openssl
@pytest.mark.parametrize("mutual", [False, True])
async def test_tls_and_mtls(tmp_path: Path, encoder: OnnxTextEncoder, mutual: bool) -> None:
    p = make_pki(tmp_path)
    settings = tls_settings(tmp_path / "srv", p, mutual)
    check(settings)
    srv, executor = await start_server(tmp_path / "srv", encoder, settings)
    try:
        ca = p["ca.pem"].read_bytes()
        own = (p["cli.key"].read_bytes(), p["cli.pem"].read_bytes()) if mutual else (None, None)
        await _stats(srv.target, Tls(ca, *own))  # the right CA (and certificate): served
        with pytest.raises(grpc.aio.AioRpcError) as plain:
            await _stats(srv.target, None)  # plaintext to a TLS port
        assert plain.value.code() == grpc.StatusCode.UNAVAILABLE
        with pytest.raises(grpc.aio.AioRpcError) as bad:
            await _stats(srv.target, Tls(ca, *own), token="wrong")
        assert bad.value.code() == grpc.StatusCode.UNAUTHENTICATED
        if mutual:  # no client certificate: the handshake fails
            with pytest.raises(grpc.aio.AioRpcError) as anon:
                await _stats(srv.target, Tls(ca))
            assert anon.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await stop_server(srv, executor)


def test_no_tokens_beyond_loopback_needs_allow_unauthenticated(tmp_path: Path) -> None:
    base = make_settings(tmp_path)
    for listen in ("127.0.0.1:0", "[::1]:0", "localhost:50051"):
        check(msgspec.structs.replace(base, server=ServerSettings(listen=listen)))
    wide = ServerSettings(listen="0.0.0.0:50051", data_dir=str(tmp_path))
    with pytest.raises(ConfigError, match=r"server\.allow_unauthenticated"):
        check(msgspec.structs.replace(base, server=wide))
    check(with_tokens(msgspec.structs.replace(base, server=wide)))
    check(
        msgspec.structs.replace(
            base, server=msgspec.structs.replace(wide, allow_unauthenticated=True)
        )
    )


def test_tls_files_are_checked(tmp_path: Path) -> None:
    base: Settings = make_settings(tmp_path)
    for tls, key in (
        (TlsSettings(cert_file=str(tmp_path / "nope.pem"), key_file=str(tmp_path / "k")), "tls"),
        (TlsSettings(cert_file=str(tmp_path / "x")), "tls.key_file"),
        (TlsSettings(client_ca_file=str(tmp_path / "ca")), "tls.client_ca_file"),
    ):
        with pytest.raises(ConfigError, match=key):
            check(msgspec.structs.replace(base, tls=tls))


def _health_probe() -> Path:
    """grpc_health_probe, built as the container's probe stage builds it (needs `go`)."""
    path: Path = load_tool("runtime_env").build_probe()
    return path


async def _probe(probe: Path, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        str(probe), "-connect-timeout=30s", "-rpc-timeout=30s", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


@needs_openssl
@pytest.mark.skipif(shutil.which("go") is None, reason="grpc_health_probe is built with go")
@pytest.mark.parametrize("mutual", [False, True])
async def test_grpc_health_probe_checks_every_service_over_tls(
    tmp_path: Path, encoder: OnnxTextEncoder, mutual: bool
) -> None:
    probe = await asyncio.to_thread(_health_probe)
    p = make_pki(tmp_path)
    settings = tls_settings(tmp_path / "srv", p, mutual)
    srv, executor = await start_server(tmp_path / "srv", encoder, settings)
    try:
        creds = ["-tls", f"-tls-ca-cert={p['ca.pem']}", "-tls-server-name=localhost"]
        if mutual:
            creds += [f"-tls-client-cert={p['cli.pem']}", f"-tls-client-key={p['cli.key']}"]
        for service in ("", SERVICE_NAME, LEDGER_NAME, AGENT_NAME):
            code, out = await _probe(probe, f"-addr={srv.target}", *creds, f"-service={service}")
            assert (code, out.strip()) == (0, "status: SERVING"), (service, out)
        code, out = await _probe(probe, f"-addr={srv.target}")  # plaintext to a TLS port
        assert code != 0, out
        code, out = await _probe(probe, f"-addr={srv.target}", *creds, "-service=nope.V1")
        assert code != 0 and "NotFound" in out.replace(" ", ""), out
    finally:
        await stop_server(srv, executor)
