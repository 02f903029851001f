#!/usr/bin/env bash
# The linux-arm64 build, tested for real on this x64 machine under qemu-user (Debian's
# qemu-user-static, with the arm64 libc/libstdc++ of libc6-arm64-cross and
# libstdc++6-arm64-cross): builds dist/harness-bridge-linux-arm64, then runs --version, the
# snapshot tests and the Python runtime smoke through it (scripts/arm64-under-qemu), and builds
# its manylinux_2_28_aarch64 wheel, kept in dist/ beside the arm64 binary (with its .sha256).
# bin/harness-bridge is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
# vitest colours its output whenever TERM is not "dumb", tty or not: escape codes in a piped
# log (CI, `| tee`) are noise. As scripts/test.sh does.
[ -t 1 ] || export NO_COLOR=1
for tool in qemu-aarch64-static aarch64-linux-gnu-strip; do
  command -v "$tool" >/dev/null 2>&1 || { echo "test-arm64: $tool is missing (apt-get install qemu-user-static binutils-aarch64-linux-gnu)" >&2; exit 1; }
done
[ -f /usr/aarch64-linux-gnu/lib/libstdc++.so.6 ] || { echo "test-arm64: the arm64 libraries are missing (apt-get install libc6-arm64-cross libstdc++6-arm64-cross)" >&2; exit 1; }

echo "== arm64: build"
node scripts/build.mjs --arch arm64
(cd dist && sha256sum -c harness-bridge-linux-arm64.sha256)
wrapper="$PWD/scripts/arm64-under-qemu"
version=$("$wrapper" --version)
expected=$(node -p 'require("./package.json").version')
[ "$version" = "$expected" ] || { echo "test-arm64: --version printed '$version', expected '$expected'" >&2; exit 1; }
echo "arm64 --version: $version"

echo "== arm64: snapshot tests and the runtime it reports, through the arm64 binary"
# runtime-info: serverInfo.runtime is the pinned Node (package.json config.embeddedNode), arm64.
HARNESS_TEST_BINARY="$wrapper" scripts/vitest run test/snapshots.test.ts test/server/runtime-info.test.ts
echo "== arm64: Python runtime smoke through the arm64 binary"
HARNESS_TEST_BINARY="$wrapper" .venv/bin/python scripts/smoke-python-runtime.py

runtime=$(node -e '
  const { spawn } = require("node:child_process");
  const p = spawn(process.argv[1], ["--stdio", "--no-session-log"], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  p.stdout.on("data", (d) => { out += d; if (out.includes("\n")) { const r = JSON.parse(out).result.serverInfo.runtime; console.log(`${r.node} ${r.platform}-${r.arch}`); p.kill(); } });
  p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { provider: "scripted", model: "demo", cwd: "/" } }) + "\n");
' "$wrapper")
pinned=$(node -p 'require("./package.json").config.embeddedNode')
[ "$runtime" = "$pinned linux-arm64" ] || { echo "test-arm64: serverInfo.runtime is '$runtime', expected '$pinned linux-arm64'" >&2; exit 1; }
echo "arm64 runtime: node $runtime"

echo "== arm64: bash fails closed without bubblewrap under qemu (it does not emulate Landlock)"
ws=$(mktemp -d)
status=$(HARNESS_BWRAP=off HARNESS_SESSION_ROOT="$ws/sessions" node -e '
  const { spawn } = require("node:child_process");
  const p = spawn(process.argv[1], ["--stdio"], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  p.stdout.on("data", (d) => { out += d; if (out.includes("\n")) { console.log(JSON.stringify(JSON.parse(out).result.sandbox)); p.kill(); } });
  p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { provider: "scripted", model: "demo", cwd: process.argv[2] } }) + "\n");
' "$wrapper" "$ws")
rm -rf "$ws"
case "$status" in
  '{"bash":"none","reason":"bubblewrap is switched off'*'Landlock confinement cannot run'*) echo "arm64 sandbox under qemu: none (fail closed)" ;;
  '{"bash":"landlock"'*) echo "arm64 sandbox under qemu: landlock (this qemu passes Landlock through)" ;;
  *) echo "test-arm64: unexpected sandbox status under qemu: $status" >&2; exit 1 ;;
esac

echo "== arm64: wheel"
# Kept in dist/ (not a temporary folder): it is what a release of linux-arm64 ships.
wheel=$(.venv/bin/python python/sdk/scripts/build_wheel.py --bin dist/harness-bridge-linux-arm64 --out dist | tail -n 1)
case "$wheel" in
  */dist/*-py3-none-manylinux_2_28_aarch64.whl) ;;
  *) echo "test-arm64: unexpected wheel $wheel" >&2; exit 1 ;;
esac
(cd dist && sha256sum "$(basename "$wheel")" > "$(basename "$wheel").sha256")
echo "arm64 wheel: dist/$(basename "$wheel")"
