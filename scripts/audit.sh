#!/usr/bin/env bash
# Audits what ships against the known advisories: the npm packages bundled into the binary
# (`npm audit --omit=dev --audit-level=high`: a high or critical advisory fails) and the Python
# SDK's runtime dependencies (pip-audit, from PyPI, over a folder holding only what
# `pip install deepseek-harness` installs: any known vulnerability fails). .ci/run runs it.
#
# Both ask their registry's advisory service (npm's bulk advisory endpoint, PyPI's JSON API).
# Where that service cannot be reached (a registry mirror serving installs only), nothing is
# known and nothing was audited: that is said loudly, and fails only with HARNESS_REQUIRE_AUDIT=1
# (a CI whose registries do answer should set it).
#
#   scripts/audit.sh [npm|pip]    one part only (default: both, as .ci/run runs it)
#
# The npm verdicts are tested against a fake advisory endpoint (test/dist-build/audit.test.ts),
# through npm_config_registry; pip-audit's are not (its PyPI service's URL is fixed in pip-audit).
set -uo pipefail
cd "$(dirname "$0")/.."
part=${1:-all}
case "$part" in
  all | npm | pip) ;;
  *) echo "usage: scripts/audit.sh [npm|pip]" >&2; exit 2 ;;
esac
status=0
unreachable() {
  echo "audit: NOT AUDITED: $1 could not be reached ($2)" >&2
  if [ "${HARNESS_REQUIRE_AUDIT:-0}" = "1" ]; then status=1; fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The parts are left unindented inside their `if`s: the pip part's heredoc ends at column 0.
if [ "$part" != pip ]; then
echo "== npm audit --omit=dev --audit-level=high"
npm audit --omit=dev --audit-level=high --json > "$tmp/npm.json" 2> /dev/null
rc=$?
# A report has metadata.vulnerabilities; an endpoint failure is {message, ...} instead.
verdict=$(node -e '
  const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const v = j.metadata && j.metadata.vulnerabilities;
  console.log(v ? `report high=${v.high} critical=${v.critical} total=${v.total}` : `error ${j.message || j.error?.summary || "no report"}`);
' "$tmp/npm.json" 2>/dev/null || echo "error no JSON from npm audit")
case "$verdict" in
  report*)
    echo "npm: ${verdict#report }"
    if [ "$rc" -ne 0 ]; then npm audit --omit=dev --audit-level=high >&2; status=1; fi ;;
  *) unreachable "npm's advisory endpoint" "${verdict#error }" ;;
esac
fi

if [ "$part" != npm ]; then
echo "== pip-audit: the SDK's runtime dependencies"
if ! .venv/bin/python -c 'import pip_audit' 2>/dev/null; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check pip-audit >&2 || { echo "audit: could not install pip-audit" >&2; exit 1; }
fi
# Only what ships: the SDK and its dependencies in a folder of their own (not this venv's test
# tools), the SDK itself left out (it is not on PyPI: nothing to look up).
.venv/bin/python -m pip install --quiet --disable-pip-version-check --target "$tmp/site" ./python/sdk >&2 || { echo "audit: could not install the SDK" >&2; exit 1; }
rm -rf "$tmp"/site/deepseek_harness*
.venv/bin/python -m pip_audit --path "$tmp/site" --format json --output "$tmp/pip.json" >/dev/null 2>&1
.venv/bin/python - "$tmp/pip.json" <<'EOF'
import json, sys
deps = json.load(open(sys.argv[1]))["dependencies"]
vulns = [(d["name"], d["version"], v["id"], v.get("fix_versions")) for d in deps for v in d.get("vulns", [])]
skipped = [d["skip_reason"].rsplit(": ", 1)[-1] if ": " in d["skip_reason"] else d["name"] for d in deps if d.get("skip_reason")]
audited = [f'{d["name"]} {d["version"]}' for d in deps if not d.get("skip_reason")]
print(f"pip: audited {', '.join(audited) or 'nothing'}")
for name, version, vid, fix in vulns:
    print(f"pip: {name} {version}: {vid} (fixed in {', '.join(fix) or 'no release yet'})", file=sys.stderr)
if skipped:
    print(f"audit: NOT AUDITED: PyPI's advisory data could not be had for {', '.join(skipped)}", file=sys.stderr)
sys.exit(1 if vulns else 3 if skipped else 0)
EOF
rc=$?
# 1: a known vulnerability; 3: some dependencies could not be looked up (no advisory data).
case "$rc" in
  0) ;;
  3) unreachable "PyPI's JSON API" "see above" ;;
  *) status=1 ;;
esac
fi

exit "$status"
