#!/usr/bin/env bash
# For runs on a GPU machine (which has no Node and no node_modules): copies what the bundled GPU tests and benchmarks
# need from dist/ into dist-gpu/ (without source maps, so the carried tree stays small), and the command line (cli.js
# and its per-command bundles). Then carry .gpu (the Node that `bash ../shared/gpu/stage` puts there) and dist-gpu, and
# run there:
#   source .gpu/env.sh && node --test dist-gpu/gpu-tests/ && node dist-gpu/bench/tuner.js
# and the CLI (with the report's page script beside it): node dist-gpu/cli.js tune SPEC.yaml --report $OUT/report.html
#   source .gpu/env.sh && node dist-gpu/cli.js probe && node dist-gpu/bench/cli-startup.js
# The bundles find the repository (examples/, test fixtures) two levels up, as they do from dist/.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf dist-gpu && mkdir -p dist-gpu
cp dist/gpu-worker.js dist/cli.js dist/cli-*.js dist/report-page.js dist/chart-and-code.css dist/*.wasm dist-gpu/
cp -r dist/native dist-gpu/
for dir in gpu-tests bench; do
  mkdir -p "dist-gpu/$dir" && find "dist/$dir" -maxdepth 1 -name '*.js' -exec cp {} "dist-gpu/$dir/" \;
  cp -r dist/native "dist-gpu/$dir/"  # the tests' own skip check loads the addon beside them
done
du -sh dist-gpu .gpu
