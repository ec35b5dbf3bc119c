#!/usr/bin/env bash
# Fresh Debian 12 machine → built augur: installs packages, configures and builds build/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build
