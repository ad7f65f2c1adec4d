#!/usr/bin/env bash
# Install ghz (the gRPC load generator of `make loadtest`) at a pinned version into
# <repo>/.tools/bin/ghz, from the Go module proxy with `go install`. Idempotent: nothing is
# done when the binary there is already that version. Needs Go (checked with Go 1.26).
#
# The version is pinned: `@latest` resolves to an old release (v0.93.0) on the proxy.
set -euo pipefail

GHZ_VERSION="${GHZ_VERSION:-v0.120.0}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.tools/bin"
GHZ="$BIN/ghz"

have_version() {
  # The module version Go recorded in the binary (ghz's own --version says what the build's
  # linker flags set, which `go install` does not).
  [[ -x "$GHZ" ]] && go version -m "$GHZ" 2>/dev/null \
    | awk '$1 == "mod" && $2 == "github.com/bojand/ghz" {print $3}' | grep -qx "$GHZ_VERSION"
}

if ! command -v go >/dev/null 2>&1; then
  echo "install_ghz: Go is needed to build ghz (https://go.dev/dl/); none on PATH" >&2
  exit 1
fi
if have_version; then
  echo "ghz $GHZ_VERSION already at ${GHZ#"$ROOT"/}"
  exit 0
fi
mkdir -p "$BIN"
# What is installed under .tools/ is never committed.
[[ -f "$ROOT/.tools/.gitignore" ]] || printf '# Installed tools (tools/install_ghz.sh).\n*\n' >"$ROOT/.tools/.gitignore"
echo "installing ghz $GHZ_VERSION into ${BIN#"$ROOT"/} (go install, from the Go module proxy)"
GOBIN="$BIN" go install -ldflags "-s -w -X main.version=$GHZ_VERSION" \
  "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION"
have_version || { echo "install_ghz: $GHZ is not ghz $GHZ_VERSION" >&2; exit 1; }
echo "ghz: $("$GHZ" --version 2>&1)"
