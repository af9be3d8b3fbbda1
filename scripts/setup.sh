#!/usr/bin/env bash
# Installs every Debian package that Hourglass builds and tests with. Idempotent; run as root.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build pkg-config clang-format
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libexpected-dev
  libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  libsqlite3-dev libpq-dev postgresql libsodium-dev libcpp-httplib-dev libssl-dev
  chromium sqlite3 openssl
  clang libclang-rt-14-dev clang-tidy
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "setup: all ${#PACKAGES[@]} packages present"
