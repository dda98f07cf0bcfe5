#!/usr/bin/env bash
# The whole suite (npm test) with one core kept busy beside it, as on a loaded CI machine:
# Debian's stress-ng spins one CPU worker for as long as the suite runs. `npm run test:stress -- N`
# runs it N times in a row and stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v stress-ng >/dev/null || { echo "stress-ng is missing: run infra/bootstrap.sh" >&2; exit 1; }
runs=${1:-1}
stress-ng --cpu 1 --quiet &
stress=$!
trap 'kill "$stress" 2>/dev/null || true' EXIT
for ((i = 1; i <= runs; i++)); do
  echo "[test:stress] run $i of $runs, beside stress-ng --cpu 1 (pid $stress)" >&2
  npm test
done
