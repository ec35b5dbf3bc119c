#!/usr/bin/env bash
# Installs the Debian 12 packages augur builds and tests with, and the npm packages of the server
# client tests (tests/server/clients, pinned by its package-lock.json); a no-op when all are present.
set -euo pipefail
cd "$(dirname "$0")/.."
# curl and chromium drive the server tests (tests/server/openai_client_test.cpp, chat_page_test.cpp).
# clang with its runtime (libFuzzer, FuzzedDataProvider.h) builds the fuzz targets (scripts/fuzz.sh);
# every build replays their corpora.
packages=(g++ cmake ninja-build pkg-config libfmt-dev libcli11-dev nlohmann-json3-dev
          libcpp-httplib-dev libicu-dev libssl-dev libgtest-dev libgmock-dev clang-format
          curl chromium clang libclang-rt-14-dev)
# Node.js and npm usually come with the machine (a newer Node than Debian's); Debian's otherwise.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# npm ci when node_modules is missing or was installed from another package-lock.json (the stamp
# holds the lock's hash). puppeteer-core never downloads a browser: the tests use /usr/bin/chromium.
clients=tests/server/clients
stamp="$clients/node_modules/.augur-lock-sha256"
lock_sha=$(sha256sum "$clients/package-lock.json" | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_sha" ]; then
  echo "npm ci in $clients" >&2
  (cd "$clients" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$lock_sha" >"$stamp"
fi
