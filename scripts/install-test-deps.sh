#!/usr/bin/env bash
# What the tests need beyond `npm ci`, from Debian's packages: chromium for the console's browser tests
# (driven by playwright-core, never a browser playwright downloads itself) and redis-server for the
# scale-out tests. Installs only what is missing; .ci/run calls it, and so can a developer (as root, or
# with sudo on PATH). What is still missing afterwards is reported: on a developer's machine its tests
# then skip, saying why, and this exits 0; in CI (CI set to anything but "", "0" or "false") it exits 1,
# as the tests themselves would fail (test/helpers/needs.ts).
set -uo pipefail

chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
missing() {
  local m=()
  command -v redis-server >/dev/null 2>&1 || m+=(redis-server)
  [ -x "$chromium" ] || m+=(chromium)
  # Recorded speech for the noise suppressor's tests.
  [ -f /usr/share/asterisk/sounds/en_US_f_Allison/cannot-complete-as-dialed.wav ] || m+=(asterisk-core-sounds-en-wav)
  echo "${m[*]}"
}

read -ra need <<<"$(missing)"
[ ${#need[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "== installing ${need[*]}"
{ $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null; } ||
  echo "== apt-get could not install ${need[*]}"

read -ra still <<<"$(missing)"
[ ${#still[@]} -eq 0 ] && exit 0
what="${still[*]}"
[ -x "$chromium" ] || what="${what/chromium/chromium (none at $chromium)}"
case "${CI:-}" in
  "" | 0 | false | FALSE | False)
    echo "== still missing: $what: their tests will be skipped"
    exit 0
    ;;
  *)
    echo "== still missing: $what: CI must run their tests" >&2
    exit 1
    ;;
esac
