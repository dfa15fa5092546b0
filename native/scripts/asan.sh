#!/usr/bin/env bash
# Builds the addon with AddressSanitizer (in a scratch copy, leaving build/ alone) and runs the
# native test suite against the real CPU plugin with it. Usage: native/scripts/asan.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/.." && pwd)
work=$(mktemp -d /tmp/hloserve-asan.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r "$here/binding.gyp" "$here/src" "$work/"
nodedir=${npm_config_nodedir:-}
[ -z "$nodedir" ] && [ -f /usr/include/node/node_api.h ] && nodedir=/usr
gyp=$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js
(cd "$work" && NODE_PATH="$root/node_modules" CXXFLAGS="-fsanitize=address -fno-omit-frame-pointer -g" \
  LDFLAGS="-fsanitize=address" npm_config_nodedir="$nodedir" node "$gyp" rebuild --jobs max >/dev/null)
asan=$(g++ -print-file-name=libasan.so)
(cd "$root" && npx tsc -b native)
# Node itself is not instrumented, so leak checking would report V8's own allocations.
# quarantine_size_mb=0: a quarantine holds freed memory on purpose, which the RSS test would read as growth.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:quarantine_size_mb=0
cd "$root"
HLOSERVE_ADDON="$work/build/Release/hloserve_pjrt.node" LD_PRELOAD="$asan" \
  node --expose-gc --test --test-concurrency=1 native/dist/test/
echo "asan: native suite passed under AddressSanitizer"
