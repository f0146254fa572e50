#!/usr/bin/env bash
# Installs everything diagnose needs to build, run and test, from Debian 12 packages only.
# Run as root. Safe to re-run. Never starts the Prometheus or VictoriaMetrics system service.
#
#   scripts/install-deps.sh            # everything: build, run, and every test (README command 2, CI)
#   scripts/install-deps.sh --build    # what building diagnose and its fixture jobs and diagnosing one
#                                      # needs (README command 1); the test-only tools (Chromium, clang
#                                      # and libFuzzer, Slurm and munge, VictoriaMetrics, jq, the
#                                      # Python checkers, ccache) come with the plain command
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

build_packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl
  libcurl4-openssl-dev nlohmann-json3-dev libboost-graph-dev libyaml-cpp-dev
  libspdlog-dev libfmt-dev libcli11-dev libgtest-dev libgmock-dev
  libsimdjson-dev libisal-dev zlib1g-dev
  prometheus
)
test_packages=(
  victoria-metrics python3
  chromium chromium-driver python3-jsonschema python3-yaml
  clang libclang-rt-14-dev ccache
  munge slurmctld slurmd slurm-client jq
)
case "${1:-}" in
  --build) packages=("${build_packages[@]}") ;;
  "") packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: scripts/install-deps.sh [--build]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

# The prometheus and victoria-metrics packages would start system services on :9090 and :8428, and
# the Slurm and munge ones theirs; diagnose and its tests only ever run their own private instances
# (tests/slurm/ starts a cluster on free ports), so block service starts during the install
# (restored afterwards).
policy=/usr/sbin/policy-rc.d
restore_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; restore_policy=1
fi
trap '[ -n "$restore_policy" ] && rm -f "$policy"' EXIT

apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
if [ -d /run/systemd/system ]; then
  systemctl disable --now prometheus victoria-metrics slurmctld slurmd munge 2>/dev/null || true
fi
echo "install-deps: installed ${missing[*]}"
