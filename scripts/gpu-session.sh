#!/usr/bin/env bash
# One command for a short GPU lease: install what gpu-check.sh needs, run it, run the GPU tests,
# and pack every output into one archive (lease tools bring back a few files, not a tree).
# Usage (repository root): bash scripts/gpu-session.sh DEST_DIR
#   Wheels in .whl/ (msgspec, questionary, ...) are installed first when present: GPU machines
#   often have no package index. The archive is DEST_DIR/gpu-check.tgz; the table is printed.
set -u
DEST="${1:?usage: gpu-session.sh DEST_DIR}"
mkdir -p "$DEST"
PY="${PYTHON:-python3}"
WORK="$(mktemp -d)"
if compgen -G ".whl/*.whl" > /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" .whl/*.whl
  export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
timeout "${WW_CHECK_LIMIT:-330}" bash scripts/gpu-check.sh "$WORK/out"
echo "gpu-check rc=$?"
timeout "${WW_TEST_LIMIT:-200}" "$PY" -m pytest -m gpu -p no:cacheprovider -o timeout=190 \
  tests/probes/test_probes.py -rs -q > "$WORK/out/pytest-gpu.txt" 2>&1
echo "pytest -m gpu rc=$?" | tee -a "$WORK/out/pytest-gpu.txt"
tail -5 "$WORK/out/pytest-gpu.txt"
tar czf "$DEST/gpu-check.tgz" -C "$WORK" out
ls -la "$DEST"
