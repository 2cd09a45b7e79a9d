#!/usr/bin/env bash
# Installs what the extension tests need to run a real VS Code offline (see shared/recipes/README.md):
#   - Debian packages: chromium (Playwright drives it), ripgrep (replaces the binary @vscode/ripgrep would download),
#     libkrb5-dev (gssapi.h, for code-server's kerberos module); installed with apt-get when missing (needs root).
#   - code-server 4.100.3 (= VS Code 1.100.3, the newest that runs on Node 20) in its own folder, .tools/code-server,
#     never in the project's node_modules.
# Idempotent: a second run with everything in place returns at once. Prints the code-server binary path last (on
# stdout, where it is the only output; what it is doing goes to stderr).
set -euo pipefail

VERSION=4.100.3
RIPGREP_CACHE=vscode-ripgrep-cache-1.15.11
RIPGREP_TARBALL=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${CODE_SERVER_DIR:-$root/.tools/code-server}"
bin="$dest/node_modules/.bin/code-server"

installed_version() {
  node -e 'try { console.log(require(process.argv[1]).version) } catch { console.log("") }' "$dest/node_modules/code-server/package.json"
}

missing=()
command -v rg >/dev/null || missing+=(ripgrep)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -f /usr/include/gssapi/gssapi.h ] || missing+=(libkrb5-dev)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-code-server: missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install -y ${missing[*]})" >&2
    exit 1
  fi
  echo "install-code-server: apt-get install ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ -x "$bin" ] && [ "$(installed_version)" = "$VERSION" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$dest"
# Its own TMPDIR: @vscode/ripgrep looks for a cached release tarball there before downloading; we put the system rg in it.
export TMPDIR="$dest/.tmp"
mkdir -p "$TMPDIR/$RIPGREP_CACHE" "$TMPDIR/rg"
cp "$(command -v rg)" "$TMPDIR/rg/rg"
tar czf "$TMPDIR/$RIPGREP_CACHE/$RIPGREP_TARBALL" -C "$TMPDIR/rg" rg
[ -f "$dest/package.json" ] || echo '{ "name": "code-server-for-tests", "private": true }' > "$dest/package.json"
# As root, node-pty's postinstall runs npx: it needs unsafe-perm and must not prompt.
export npm_config_unsafe_perm=true npm_config_yes=true
# Said before the wait: npm is silent here (its output goes to the log) for a minute or two.
echo "install-code-server: installing code-server $VERSION into $dest (about 90 s: npm compiles its native modules; log: $dest/install.log)" >&2
started=$SECONDS
(cd "$dest" && npm install --no-audit --no-fund --no-save --foreground-scripts "code-server@$VERSION" >"$dest/install.log" 2>&1) || {
  tail -n 40 "$dest/install.log" >&2
  echo "install-code-server: npm install code-server@$VERSION failed (log: $dest/install.log)" >&2
  exit 1
}
echo "install-code-server: code-server $VERSION installed in $((SECONDS - started)) s" >&2
echo "$bin"
