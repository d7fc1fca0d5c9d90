#!/usr/bin/env bash
# Run distlint.runtime's NCCL tests on a GPU machine and print a clear summary.
#
#   scripts/gpu_check.sh            # from anywhere; a minute or two, bounded at 8 minutes
#
# What must hold (exit 0 only if it does):
#   * NCCL world size 1 (NcclWorldSize1) and world size = GPU count (NcclCase) pass;
#   * NCCL world size 2 (NcclWorldSize2) passes with >= 2 GPUs, and with one GPU is
#     *skipped* with the registry's "Need at least 2 CUDA devices" (never passed, never failed).
#   * fast start under pytest-xdist (`pytest -n 2 --distlint-fast-start`, per-test NCCL classes):
#     every test passes, and with >= 2 GPUs the two workers run on disjoint GPUs
#     (CUDA_VISIBLE_DEVICES split per worker); with one GPU they share it.
#   * the migrated DTensor and FSDP fixtures (scripts/migrated_fixtures_check.py) pass and skip the
#     same tests as their originals, on NCCL, with both --runtime distlint and --runtime torch.
# Exit 1: a test failed or was skipped where it should have run.  Exit 2: no CUDA here.
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO" || exit 2
PYTHON="${PYTHON:-python}"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
# A stray override from the calling shell must not change what is checked.
unset DISTLINT_TEST_TIMEOUT
export DISTLINT_TEST_TIMEOUT=120

if ! "$PYTHON" -c "import distlint.runtime" 2>/dev/null; then
    echo "== installing distlint (no dependencies, no network needed)"
    "$PYTHON" -m pip install --quiet --no-deps --no-build-isolation -e "$REPO" || exit 2
fi

echo "== machine"
command -v nvidia-smi >/dev/null && nvidia-smi -L
"$PYTHON" - <<'EOF'
import torch, torch.distributed as dist
from distlint.runtime import start_method
gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
nccl = dist.is_nccl_available()
version = ".".join(map(str, torch.cuda.nccl.version())) if nccl and gpus else "-"
print(f"torch {torch.__version__}, CUDA build {torch.version.cuda}, GPUs {gpus}, NCCL built in: {nccl} ({version})")
print(f"worker start method: {start_method.choose_start_method()}"
      f" (fork server unsafe because: {start_method.forkserver_unsafe_reason() or 'nothing'})")
EOF
GPUS="$("$PYTHON" -c "import torch, torch.distributed as d
print(torch.cuda.device_count() if torch.cuda.is_available() and d.is_nccl_available() else 0)")"
if ! [[ "$GPUS" =~ ^[0-9]+$ ]] || [ "$GPUS" -eq 0 ]; then
    echo "== no CUDA device with NCCL here: nothing to check (the CPU test suite covers the skip path)"
    exit 2
fi

echo "== running tests/runtime/cases/nccl_case.py -v (bounded: 240 s)"
LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
timeout --kill-after=10 240 "$PYTHON" tests/runtime/cases/nccl_case.py -v 2>&1 | tee "$LOG"
STATUS=${PIPESTATUS[0]}

echo "== fast start under pytest-xdist: tests/runtime/cases/gpu_split_case.py -n 2 (bounded: 240 s)"
SPLIT_DIR="$(mktemp -d)"
trap 'rm -f "$LOG"; rm -rf "$SPLIT_DIR"' EXIT
DISTLINT_CASE_LOG="$SPLIT_DIR/case.log" timeout --kill-after=10 240 "$PYTHON" -m pytest \
    tests/runtime/cases/gpu_split_case.py -n 2 --distlint-fast-start -q -p no:cacheprovider --noconftest \
    --junit-xml="$SPLIT_DIR/report.xml" 2>&1 | tail -15
SPLIT_STATUS=${PIPESTATUS[0]}
# Outcomes from the JUnit report, GPUs from the case log (structured, not the printed text).
"$PYTHON" - "$SPLIT_DIR" "$GPUS" "$SPLIT_STATUS" <<'EOF' || SPLIT_FAILED=1
import json, os, sys, xml.etree.ElementTree as ET
folder, gpus, status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
problems = []
try:
    cases = list(ET.parse(os.path.join(folder, "report.xml")).getroot().iter("testcase"))
except (OSError, ET.ParseError) as exc:
    cases, problems = [], [f"no JUnit report ({exc})"]
failed = [c.get("name") for c in cases if any(child.tag in ("failure", "error", "skipped") for child in c)]
if len(cases) != 4 or failed:
    problems.append(f"{len(cases)} tests reported, not passed: {failed}")
log = os.path.join(folder, "case.log")
records = [json.loads(line) for line in open(log) if line.strip()] if os.path.exists(log) else []
by_worker = {}
for r in records:
    by_worker.setdefault(r["worker"], set()).add(r["uuid"])
print(f"GPUs used per worker: { {w: sorted(u) for w, u in sorted(by_worker.items())} }")
print(f"CUDA_VISIBLE_DEVICES per worker: { {r['worker']: r['visible'] for r in records} }")
if gpus >= 2:
    shared = [(a, b) for a in by_worker for b in by_worker if a < b and by_worker[a] & by_worker[b]]
    if len(by_worker) != 2 or shared:
        problems.append(f"workers did not get disjoint GPUs: {by_worker}")
else:
    print("one GPU: the two workers share it (not split)")
if status in (124, 137):
    problems.append(f"timed out (exit {status})")
print(f"== xdist GPU split: {'OK' if not problems else 'FAILED: ' + '; '.join(problems)}")
sys.exit(1 if problems else 0)
EOF

"$PYTHON" - "$LOG" "$GPUS" "$STATUS" <<'EOF'
import re, sys
log, gpus, status = open(sys.argv[1]).read(), int(sys.argv[2]), int(sys.argv[3])
tests = re.findall(r"^(test_\w+) \(__main__\.(\w+)\.\w+\) \.\.\. .*?(ok|FAIL|ERROR|skipped '[^']*')$", log, re.M | re.S)
class_skips = re.findall(r"^setUpClass \(__main__\.(\w+)\) \.\.\. skipped '([^']*)'", log, re.M)
expect_run = {"NcclCase": True, "NcclWorldSize1": True, "NcclWorldSize2": gpus >= 2}
problems = []
print("\n== summary")
for cls, should_run in expect_run.items():
    results = [outcome for _, c, outcome in tests if c == cls]
    skipped_class = [msg for c, msg in class_skips if c == cls]
    if should_run:
        good = len(results) == 3 and all(r == "ok" for r in results)
        line = f"{cls:16s} {'PASS' if good else 'PROBLEM'}: {', '.join(results) or 'no test ran'}"
        if skipped_class:
            line += f" (class skipped: {skipped_class[0]})"
        if not good:
            problems.append(cls)
    else:
        good = skipped_class == ["Need at least 2 CUDA devices"] and not results
        line = f"{cls:16s} {'SKIPPED as expected' if good else 'PROBLEM'} with {gpus} GPU: {skipped_class or results}"
        if not good:
            problems.append(cls)
    print(line)
if status == 124 or status == 137:
    problems.append(f"timed out (exit {status})")
print(f"== {'OK' if not problems else 'FAILED: ' + ', '.join(problems)}  (test process exit {status})")
sys.exit(1 if problems else 0)
EOF
SUMMARY_STATUS=$?

# The migrate fixtures of the per-test bases (DTensorTestBase at world size 4, FSDPTest at 2) on
# the device's backend, NCCL here: original (fast start) vs migrated, both runtimes, same outcomes.
echo "== migrated DTensor and FSDP fixtures under NCCL (bounded: 900 s)"
timeout --kill-after=10 900 "$PYTHON" scripts/migrated_fixtures_check.py \
    test_gloo_dtensor_ops.py test_gloo_fsdp_style.py || MIGRATED_FAILED=1
if [ "${MIGRATED_FAILED:-0}" = 1 ]; then
    echo "== FAILED: migrated fixtures (see above)"
    exit 1
fi
if [ "${SPLIT_FAILED:-0}" = 1 ]; then
    echo "== FAILED: fast start under pytest-xdist (see above)"
    exit 1
fi
exit "$SUMMARY_STATUS"
