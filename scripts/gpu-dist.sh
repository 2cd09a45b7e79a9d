#!/usr/bin/env bash
# For runs on a GPU machine (which has no Node and no node_modules): copies what the bundled GPU tests and benchmarks
# need from dist/ into .gpu/dist/ (without source maps), beside the Node that `bash ../shared/gpu/stage` puts in .gpu/.
# Then carry .gpu and run there: source .gpu/env.sh && node --test .gpu/dist/gpu-tests/
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .gpu/dist && mkdir -p .gpu/dist
cp dist/gpu-worker.js dist/*.wasm .gpu/dist/
cp -r dist/native .gpu/dist/
for dir in gpu-tests bench; do
  mkdir -p ".gpu/dist/$dir" && find "dist/$dir" -maxdepth 1 -name '*.js' -exec cp {} ".gpu/dist/$dir/" \;
done
du -sh .gpu
