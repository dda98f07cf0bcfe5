#!/usr/bin/env bash
# Installs everything Hearth needs on Debian 12, as root: LibTorch and OpenBLAS (OpenMP flavour),
# python3-torch and torchvision for the test models, the build tools, npm dependencies, the native
# addon, and the fixture models. Idempotent, and quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[bootstrap] %s\n' "$*" >&2; }

# --- Node.js ----------------------------------------------------------------------------------
if ! command -v node >/dev/null; then
  log "Node.js is missing: install Node.js 20.19+ (or 22.12+) first"; exit 1
fi
if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit((a===20&&b>=19)||(a===22&&b>=12)||a>22?0:1)'; then
  log "Node.js $(node -v) is too old: Hearth needs 20.19+ or 22.12+"; exit 1
fi

# --- Debian packages --------------------------------------------------------------------------
PACKAGES=(
  libtorch-dev            # LibTorch 1.13 (CPU) headers, libraries and CMake config
  libopenblas0-openmp     # the BLAS LibTorch calls; the OpenMP flavour shares LibTorch's threads
  python3-torch           # makes the TorchScript test models, and is the reference in tests/benchmarks
  python3-torchvision     # ResNet-50's architecture for the test models
  cmake g++ make          # the native build
  libsimdjson-dev         # parses KServe JSON bodies in the addon (optional to the build)
  libjpeg62-turbo-dev libpng-dev libwebp-dev   # image decoding and resampling for hooks, in the addon (the decoders Pillow uses)
  python3-pil             # the reference the image functions are tested and benchmarked against
  redis-server            # the registry/queue backend exercised by the integration tests
  python3-flask gunicorn python3-fastapi uvicorn   # bench:serve's peers: the traditional deployment
  stress-ng               # npm run test:stress keeps a core busy beside the suite
  wrk                     # bench:tool checks hearth bench's own overhead against it
  chromium                # the console's tests drive it with playwright-core (no browser download)
  universal-ctags         # npm run arch measures C++ functions with it (tools/sizes.ts)
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Debian picks the pthread OpenBLAS when both flavours are installed (priority 100 vs 95). Beside
# LibTorch's OpenMP threads its own thread pool oversubscribes the cores (see docs/cpu.md), so
# select the OpenMP flavour for libblas, liblapack and libopenblas.
for lib in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
  want=/usr/lib/x86_64-linux-gnu/openblas-openmp/$lib
  name=$lib-x86_64-linux-gnu
  if [ "$(update-alternatives --query "$name" 2>/dev/null | sed -n 's/^Value: //p')" != "$want" ]; then
    log "selecting $want"
    update-alternatives --set "$name" "$want" >/dev/null
  fi
done

# --- npm dependencies -------------------------------------------------------------------------
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f node_modules/.hearth-lock ] || [ "$(cat node_modules/.hearth-lock)" != "$lock_hash" ]; then
  log "npm ci"
  npm ci --no-audit --no-fund
  echo "$lock_hash" > node_modules/.hearth-lock
fi

# --- the native addon -------------------------------------------------------------------------
addon=native/build/Release/hearth_native.node
jail=native/build/Release/hearth-jail
if [ ! -f "$addon" ] || [ ! -f "$jail" ] || [ -n "$(find native/src native/CMakeLists.txt -newer "$addon" -print -quit)" ] ||
  [ -n "$(find native/jail native/CMakeLists.txt -newer "$jail" -print -quit)" ]; then
  log "building the native addon"
  npm run --silent build:native
fi

# --- the console (console/dist, served at /console) ---------------------------------------------
npm run --silent build:console

# --- fixture models (cached; a no-op when up to date) -----------------------------------------
/usr/bin/python3 test/fixtures/make_models.py
/usr/bin/python3 test/fixtures/make_triton_repo.py
log "ready"
