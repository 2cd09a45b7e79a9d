#!/usr/bin/env bash
# Lays out what the search-quality benchmark reads, from local git mirrors of the public repositories:
#   hub/                      AutoTuningAssociation/benchmark_hub at HUB_COMMIT: LICENSE, README.md, kernels/,
#                             cachefiles/<kernel>/<GPU>.json.gz (every cache whose blob the mirror holds)
#   kernel_tuner/.vendor/     kernel_tuner (KernelTuner/kernel_tuner, tag 1.4.0) and the pure-Python modules of
#                             python-constraint (python-constraint/python-constraint, tag 2.6.0)
# Nothing is built: both packages are pure Python here (python-constraint's optional Cython files are left out).
# Usage: bench/search-quality/prepare.sh HUB_MIRROR KT_MIRROR CONSTRAINT_MIRROR   (each a git directory)
set -euo pipefail
HUB_COMMIT=8eeb99e7179e6838af95d392ac6c60cebfd8c434
KT_COMMIT=96a6abc1019179397753c4afede9149a80aec369          # kernel_tuner tag 1.4.0
CONSTRAINT_COMMIT=cac004197947d96c571a1626cdf132818fa05960  # python-constraint tag 2.6.0
if [ $# -ne 3 ]; then
  echo "usage: $0 HUB_MIRROR KT_MIRROR CONSTRAINT_MIRROR (git directories of the three repositories)" >&2
  exit 2
fi
hub_git=$1 kt_git=$2 constraint_git=$3
here=$(cd "$(dirname "$0")" && pwd)

rm -rf "$here/hub" "$here/kernel_tuner/.vendor"
mkdir -p "$here/hub" "$here/kernel_tuner/.vendor"

# git archive reports the missing cache blobs on stderr although it only reads these paths
git --git-dir="$hub_git" archive "$HUB_COMMIT" LICENSE README.md kernels 2>/dev/null | tar -x -C "$here/hub"
[ -f "$here/hub/LICENSE" ] && [ -f "$here/hub/kernels/convolution_milo.py" ]
# Blobs of 4 MiB and more are missing from the mirrors this project can fetch (gemm_milo and hotspot_milo caches):
# copy each cache whose blob is present and list the ones left out.
git --git-dir="$hub_git" ls-tree -r "$HUB_COMMIT" cachefiles | while read -r _ _ blob path; do
  case "$path" in *_T4.json.gz|*-metadata.json.gz|*-results.json.gz) continue ;; esac
  [[ "$path" == *.json.gz ]] || continue
  if git --git-dir="$hub_git" cat-file -e "$blob" 2>/dev/null; then
    mkdir -p "$here/hub/$(dirname "$path")"
    git --git-dir="$hub_git" cat-file blob "$blob" > "$here/hub/$path"
  else
    echo "missing from the mirror: $path" >&2
  fi
done
echo "$HUB_COMMIT" > "$here/hub/COMMIT"

git --git-dir="$kt_git" archive "$KT_COMMIT" kernel_tuner LICENSE | tar -x -C "$here/kernel_tuner/.vendor"
mv "$here/kernel_tuner/.vendor/LICENSE" "$here/kernel_tuner/.vendor/LICENSE.kernel_tuner"
# kernel_tuner/__init__.py reads its version from the installed package's metadata
mkdir -p "$here/kernel_tuner/.vendor/kernel_tuner-1.4.0.dist-info"
printf 'Metadata-Version: 2.1\nName: kernel_tuner\nVersion: 1.4.0\n' > "$here/kernel_tuner/.vendor/kernel_tuner-1.4.0.dist-info/METADATA"
git --git-dir="$constraint_git" archive "$CONSTRAINT_COMMIT" constraint/__init__.py constraint/constraints.py \
  constraint/domain.py constraint/parser.py constraint/problem.py constraint/solvers.py LICENSE \
  | tar -x -C "$here/kernel_tuner/.vendor"
mv "$here/kernel_tuner/.vendor/LICENSE" "$here/kernel_tuner/.vendor/LICENSE.python-constraint"
echo "hub: $(find "$here/hub/cachefiles" -name '*.json.gz' | wc -l) caches; kernel_tuner 1.4.0 and python-constraint 2.6.0 in kernel_tuner/.vendor"
