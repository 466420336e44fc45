#!/usr/bin/env bash
# What `npm test` needs from the system, run as its first step (pretest) so README's test command
# passes on a fresh machine: installs what is missing when it can (Debian's packages, as root or
# through `sudo -n`), and otherwise stops at once with the command to run. Nothing is skipped: a
# missing prerequisite fails here, in one message, rather than as a dozen failed tests ten minutes
# later. When everything is present it prints nothing and never calls apt.
set -euo pipefail

say() { printf 'test prerequisites: %s\n' "$*" >&2; }
die() { say "$@"; exit 1; }

# Chromium for the console's browser tests (CHROMIUM_PATH may name another, or
# @sparticuz/chromium for the packaged one); gcc (with its sanitizer runtimes) and clang (with its
# sanitizer and fuzzer runtime), both of which build the C client, make and cmake (which only
# recommends gcc and make), libwebsockets and cJSON; valgrind for the C client's leak check;
# python3-websockets for the spec's Python client; espeak-ng, real speech for the audio tests, and
# python3-pocketsphinx with its English model (pocketsphinx-en-us), the real speech recognizer
# that hears what espeak-ng says.
packages=(gcc make cmake clang libclang-rt-dev libwebsockets-dev libcjson-dev valgrind python3-websockets
  python3-pocketsphinx pocketsphinx-en-us espeak-ng)
case "${CHROMIUM_PATH:-}" in
  '') packages=(chromium "${packages[@]}") ;;
  @sparticuz/chromium) ;;
  *) [ -x "$CHROMIUM_PATH" ] || die "CHROMIUM_PATH is $CHROMIUM_PATH, which is not an executable: point it at a Chromium, or unset it." ;;
esac

# The Redis tests use REDIS_URL, else a Redis on 127.0.0.1:6379.
redis_answers() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ]; }
need_redis=false
if [ -z "${REDIS_URL:-}" ] && ! redis_answers; then need_redis=true; fi

missing=()
if command -v dpkg-query >/dev/null; then
  for package in "${packages[@]}"; do
    [[ "$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null)" == *" ok installed" ]] || missing+=("$package")
  done
  if $need_redis && ! command -v redis-server >/dev/null; then missing+=(redis-server); fi
else
  # No Debian packages to ask about or install: look for the programs, headers, libraries and
  # module themselves (the browser tests fall back to the Chromium in @sparticuz/chromium).
  for program in gcc make cmake clang valgrind python3 espeak-ng; do
    command -v "$program" >/dev/null || missing+=("$program")
  done
  if command -v clang >/dev/null; then
    links() { clang -x c - -o /dev/null "$@" >/dev/null 2>&1; }
    links -lwebsockets <<<$'#include <libwebsockets.h>\nint main(void) { return 0; }' || missing+=("libwebsockets (header and library)")
    links -lcjson <<<$'#include <cjson/cJSON.h>\nint main(void) { return 0; }' || missing+=("cJSON (header and library)")
    links -fsanitize=fuzzer,address,undefined <<<'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' ||
      missing+=("clang's sanitizer and libFuzzer runtime")
  fi
  if command -v gcc >/dev/null; then
    gcc -x c - -o /dev/null -fsanitize=address,undefined <<<'int main(void) { return 0; }' >/dev/null 2>&1 ||
      missing+=("gcc's sanitizer runtimes (libasan, libubsan)")
  fi
  if command -v python3 >/dev/null && ! python3 -c 'import websockets' >/dev/null 2>&1; then
    missing+=("Python's websockets module")
  fi
  if command -v python3 >/dev/null && ! python3 -c 'import pocketsphinx' >/dev/null 2>&1; then
    missing+=("Python's pocketsphinx module (0.1.15, with its en-us model in /usr/share/pocketsphinx/model/en-us)")
  fi
  if $need_redis && ! command -v redis-server >/dev/null; then missing+=("redis-server (or REDIS_URL naming a Redis)"); fi
  if [ "${#missing[@]}" -gt 0 ]; then
    die "this machine has no dpkg-query, so nothing can be installed for you. Install these with its package manager, then run npm test again:
$(printf '  %s\n' "${missing[@]}")"
  fi
fi

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
  elif command -v sudo >/dev/null; then
    die "missing Debian packages: ${missing[*]}. sudo asks for a password, so install them yourself, then run npm test again:
  sudo apt-get update && sudo apt-get install -y ${missing[*]}"
  else
    die "missing Debian packages: ${missing[*]}. Installing them needs root; run this as root, then npm test again:
  apt-get update && apt-get install -y ${missing[*]}"
  fi
  say "installing ${missing[*]}"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" ||
    die "apt-get failed (see above): fix that, or install them yourself, then run npm test again: apt-get update && apt-get install -y ${missing[*]}"
fi

# Debian's redis-server starts itself only where a service manager runs; elsewhere, start it here
# (without persistence); it keeps running after the tests, as the machine's own would.
if $need_redis && ! redis_answers; then
  say "starting redis-server on 127.0.0.1:6379"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null ||
    die "redis-server did not start: run a Redis on 127.0.0.1:6379, or set REDIS_URL to one."
  for ((i = 0; i < 50; i++)); do redis_answers && break; sleep 0.1; done
  redis_answers || die "redis-server started but does not answer PING on 127.0.0.1:6379: run a Redis there, or set REDIS_URL to one."
fi
