#!/usr/bin/env bash
# Runs test binaries that `cargo test --workspace` already built, again, without building
# anything. Selecting packages with `-p` resolves features for those packages alone, which
# rebuilds much of the tree into a second copy (CI ran out of disk that way).
#   usage: scripts/run_built_tests.sh PACKAGE[:TEST] ... [-- TEST-ARGS]
# Each binary runs from its package's directory, as `cargo test` runs it. The environment
# passes through (ROCPD_TEST_ROW_IDS, ROCPD_PYTHON, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
wanted=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do wanted+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
plan=$(cargo test --workspace --tests --no-run --message-format=json 2>/dev/null | python3 -c '
import json, os, subprocess, sys
meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"],
                                 check=True, capture_output=True, text=True).stdout)
names = {p["id"]: p["name"] for p in meta["packages"]}
wanted = [w.split(":", 1) for w in sys.argv[1:]]
found = set()
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") != "compiler-artifact" or not m.get("executable") or not m["profile"]["test"]:
        continue
    pkg = names.get(m["package_id"])
    name = m["target"]["name"]
    for w in wanted:
        if w[0] == pkg and (len(w) == 1 or w[1] == name):
            found.add(":".join(w))
            print(os.path.dirname(m["manifest_path"]) + "\t" + m["executable"])
missing = [":".join(w) for w in wanted if ":".join(w) not in found]
if missing:
    sys.exit("no built test binary for: " + " ".join(missing))
' "${wanted[@]}")
status=0
while IFS=$'\t' read -r dir exe; do
  echo "  $(basename "$exe")"
  (cd "$dir" && "$exe" -q "$@") || status=1
done <<< "$plan"
exit $status
