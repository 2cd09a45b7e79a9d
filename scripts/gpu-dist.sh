#!/usr/bin/env bash
# For runs on a GPU machine (which has no Node and no node_modules): copies what the bundled GPU tests and benchmarks
# need from dist/ into dist-gpu/ (without source maps, so the carried tree stays small), and the command line (cli.js
# and its per-command bundles). Then carry .gpu (the Node that `bash ../shared/gpu/stage` puts there) and dist-gpu, and
# run there:
#   source .gpu/env.sh && node --test dist-gpu/gpu-tests/ && node dist-gpu/bench/tuner.js
# and the CLI (with the report's page script beside it): node dist-gpu/cli.js tune SPEC.yaml --report $OUT/report.html
#   source .gpu/env.sh && node dist-gpu/cli.js probe && node dist-gpu/bench/cli-startup.js
# The bundles find the repository (examples/, test fixtures) two levels up, as they do from dist/.
# Arguments name the folders of bundles to take (default: gpu-tests bench); the command line is always taken. The
# device tool carries at most 64 MiB with the tracked files, so a run takes one of them where both do not fit.
set -euo pipefail
parts=("${@:-gpu-tests}")
[ $# -eq 0 ] && parts=(gpu-tests bench)
cd "$(dirname "$0")/.."
rm -rf dist-gpu && mkdir -p dist-gpu
cp dist/gpu-worker.js dist/cli.js dist/cli-*.js dist/report-page.js dist/chart-and-code.css dist/*.wasm dist-gpu/
cp -r dist/native dist-gpu/
for dir in "${parts[@]}"; do
  mkdir -p "dist-gpu/$dir" && find "dist/$dir" -maxdepth 1 -name '*.js' -exec cp {} "dist-gpu/$dir/" \;
  cp -r dist/native "dist-gpu/$dir/"  # the tests' own skip check loads the addon beside them
done
# Minified (names kept, for error messages and stacks): the carried tree must stay under the device tool's 64 MiB.
find dist-gpu -name '*.js' -print0 | xargs -0 -P 2 -I{} node_modules/.bin/esbuild {} --minify --keep-names --log-level=warning --allow-overwrite --outfile={}
du -sh dist-gpu .gpu
