#!/usr/bin/env bash
# What the tests need beyond `npm ci`, from Debian's packages: chromium for the console's browser tests
# (driven by playwright-core, never a browser playwright downloads itself) and redis-server for the
# scale-out tests. Installs only what is missing; .ci/run calls it, and so can a developer (as root, or
# with sudo on PATH). A package that cannot be installed is reported, and its tests skip locally.
set -uo pipefail

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "== installing ${missing[*]}"
if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
  echo "== could not install ${missing[*]}: their tests will be skipped (or fail in CI, where they must run)"
fi
exit 0
