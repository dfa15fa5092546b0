#!/usr/bin/env bash
# Creates the peers' virtual environments under .cache/peers (git-ignored), from PyPI with pip. Each
# venv sees the system site-packages for jax 0.10.2 and numpy, so every server compiles the program
# with the same XLA. Pinned versions: the latest on PyPI when this was written.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$here/../../.cache/peers"
mkdir -p "$dir"
for spec in mlserver==1.7.1 kserve==0.21.0; do
  name="${spec%%==*}"
  [ -x "$dir/$name/bin/python" ] || python3 -m venv --system-site-packages "$dir/$name"
  # MLServer 1.7.1 calls asyncio.get_event_loop() in its workers, which uvloop 0.22+ refuses.
  extra=""
  [ "$name" = mlserver ] && extra="uvloop<0.22"
  "$dir/$name/bin/pip" install -q "$spec" $extra
done
