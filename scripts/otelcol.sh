#!/usr/bin/env bash
# Builds the OpenTelemetry Collector the tracing tests send spans to (test/otelcol: the OTLP
# receiver and the OTLP/HTTP exporter of go.opentelemetry.io/collector, from the Go module
# proxy) and prints its path. Cached in ${XDG_CACHE_HOME:-~/.cache}/harness-bridge under the hash
# of its source, so CI builds it once per machine (about 3 minutes on 2 cores; then 0 s).
#   bash scripts/otelcol.sh          build if needed, print the path
#   bash scripts/otelcol.sh --path   print the path it would have, build nothing
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/test/otelcol"
hash=$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-16)
out="${XDG_CACHE_HOME:-$HOME/.cache}/harness-bridge/otelcol-$hash/otelcol"
if [ "${1:-}" = "--path" ]; then echo "$out"; exit 0; fi
if [ ! -x "$out" ]; then
  command -v go >/dev/null 2>&1 || { echo "otelcol: go is not installed (the tracing tests need it to build the collector)" >&2; exit 1; }
  mkdir -p "$(dirname "$out")"
  started=$(date +%s)
  (cd "$src" && go build -trimpath -ldflags="-s -w" -o "$out.tmp" .)
  mv "$out.tmp" "$out"
  echo "otelcol: built in $(( $(date +%s) - started )) s" >&2
fi
echo "$out"
