#!/usr/bin/env bash
# On a Linux x86-64 machine with an NVIDIA GPU and PyTorch (no Node.js, no network): builds the
# addon with the same CMake file against PyTorch's own LibTorch, then runs the engine's GPU tests,
# the engine benchmark on cuda:0, and seed 000's benchmark end to end on a node started from the kit
# (.gpu/kit.tar.xz). Prepare here first with `npm run gpu:prepare`, and carry .gpu.
# Results land in $OUT (or .gpu/out), eight files at most: build.log (the CMake build and the test
# models), gpu-tests.log, bench-cuda.log, engine-cuda.json, seed-bench.log, gpu-serve.json, node.log.
# HEARTH_SEED_SECONDS (default 8) sets the length of each of seed 000's cells.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
OUT=${OUT:-$ROOT/.gpu/out}
mkdir -p "$OUT"
PY=${HEARTH_PYTHON:-python3}

[ -f .gpu/node.xz ] && [ -f .gpu/kit.tar.xz ] || { echo "missing .gpu/node.xz or .gpu/kit.tar.xz: run npm run gpu:prepare on the dev machine and carry .gpu" >&2; exit 2; }
# Unpacked with Python's lzma and tarfile: the machine has Python, perhaps no xz.
if [ ! -x .gpu/bin/node ]; then
  mkdir -p .gpu/bin
  "$PY" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' .gpu/node.xz .gpu/bin/node
  chmod +x .gpu/bin/node
fi
export PATH="$ROOT/.gpu/bin:$PATH"
node --version

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())'

prefix=${HEARTH_TORCH_PREFIX:-$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')}
{
  cmake -S native -B .gpu/build -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DNODE_API_INCLUDE_DIRS="$ROOT/.gpu/include/node-api-headers" -DNODE_ADDON_API_DIR="$ROOT/.gpu/include/node-addon-api"
  cmake --build .gpu/build -j "$(nproc)"
} > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
grep -E 'hearth:' "$OUT/build.log" || true
export HEARTH_NATIVE_ADDON="$ROOT/.gpu/build/hearth_native.node"
# PyTorch's wheels keep their libraries beside torch/lib; the addon links them by path.
export LD_LIBRARY_PATH="$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))'):${LD_LIBRARY_PATH:-}"

export HEARTH_REPO_ROOT="$ROOT" HEARTH_PYTHON="$PY" HEARTH_FIXTURES="$ROOT/.gpu/models"
"$PY" test/fixtures/make_models.py "$HEARTH_FIXTURES" >> "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }

status=0
node --test --test-reporter=spec .gpu/engine.gpu.mjs 2>&1 | tee "$OUT/gpu-tests.log" || status=1
node .gpu/bench-engine.mjs --device "${HEARTH_BENCH_DEVICE:-cuda:0}" --threads 4 --quick --out "$OUT/engine-cuda.json" 2>&1 | tee "$OUT/bench-cuda.log" || status=1
# Seed 000's benchmark: a node from the kit, the ResNet-50 folder as printed, HTTP and gRPC at c=1,
# 16, 64, and raw LibTorch beside it. gpu-serve.json holds the rows and ratios.
# A root node runs its runners as other users: the kit and the addon go where they can read them,
# and if PyTorch's libraries are out of their reach (a venv under /root) the node runs functions in
# its own process instead (HEARTH_ISOLATION=none), and says so.
kit=$(mktemp -d /tmp/hearth-kit.XXXXXX)
# hearth-jail (the runners' kernel sandbox) and the runner template's library are built beside the
# addon, and found beside it.
"$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .gpu/kit.tar.xz "$kit"
cp "$HEARTH_NATIVE_ADDON" .gpu/build/hearth-jail .gpu/build/libhearth-template.so "$kit/" && chmod -R a+rX "$kit"
torchlib=$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch.so"))')
if [ "$(id -u)" = 0 ] && ! "$PY" -c 'import os, sys; os.setgid(65534); os.setuid(200001); open(sys.argv[1], "rb").close(); open(sys.argv[2], "rb").close()' \
    "$torchlib" "$kit/node_modules/.hearth/runner.mjs" 2>/dev/null; then
  echo "seed-bench: runner users cannot read $torchlib: functions run in the node's process (HEARTH_ISOLATION=none)" | tee "$OUT/seed-bench.log"
  export HEARTH_ISOLATION=none
fi
HEARTH_NATIVE_ADDON="$kit/hearth_native.node" node "$kit/dist/node/seed-bench.mjs" --model "$HEARTH_FIXTURES/resnet50.pt" \
  --device "${HEARTH_BENCH_DEVICE:-cuda:0}" --seconds "${HEARTH_SEED_SECONDS:-8}" --threads 4 --python "$PY" --out "$OUT" 2>&1 \
  | tee -a "$OUT/seed-bench.log" || status=1
rm -rf "$kit"
exit $status
