#!/usr/bin/env bash
# Installs what the real-Slurm test (test/unit/cli-slurm-cluster.test.ts) needs: Debian's Slurm (slurmctld, slurmd, the
# sbatch/squeue/scontrol client) and munge, with apt-get when missing (needs root). Nothing is configured or started
# here: the test writes its own slurm.conf and munge key in a temporary directory and starts the daemons itself.
# Idempotent: with everything in place it returns at once. Exits 1 with the reason on stderr when it cannot install.
set -euo pipefail

missing=()
for tool in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge; do
  command -v "${tool%%:*}" >/dev/null || [ -x "/usr/sbin/${tool%%:*}" ] || missing+=("${tool##*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-slurm: missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install -y ${missing[*]})" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "install-slurm: missing ${missing[*]}, and this system has no apt-get to install them with" >&2
  exit 1
fi
echo "install-slurm: apt-get install ${missing[*]}" >&2
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# Waits for another apt-get (a lock held by it) rather than failing at once.
apt=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -qq)
if ! { "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  echo "install-slurm: apt-get install ${missing[*]} failed" >&2
  exit 1
fi
