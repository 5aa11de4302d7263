#!/usr/bin/env bash
# Installs everything the broker and its tests need, from the npm registry only:
# the project's pinned dependencies into node_modules, and the Deno and Bun
# runtimes into .tools/ (outside node_modules: a `deno` inside the project's
# node_modules/.bin makes `deno task` run it as JavaScript).
set -euo pipefail
cd "$(dirname "$0")/.."
DENO_VERSION=2.9.6
BUN_VERSION=1.4.5
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
if [ ! -x .tools/node_modules/.bin/deno ] || [ ! -x .tools/node_modules/.bin/bun ] \
  || ! .tools/node_modules/.bin/deno --version | grep -q "deno $DENO_VERSION" \
  || [ "$(.tools/node_modules/.bin/bun --version)" != "$BUN_VERSION" ]; then
  npm install --prefix .tools --no-audit --no-fund --no-save --loglevel=error \
    "deno@$DENO_VERSION" "bun@$BUN_VERSION"
fi
# System services some tests need (headless Chromium for the browser tests), from Debian's
# packages when this runs as root on Debian; elsewhere those tests say why they skip.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ] \
  && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium) \
    >/dev/null 2>&1 || echo "install: chromium could not be installed; browser tests will skip"
fi
# etcd for the etcd coordination tests (runtime/ha/lease_backends_test.ts, tests/ha_etcd_test.ts):
# Debian's `etcd-server`, root on Debian only. Tests start their own etcd on free ports; the
# package's system service must not run, so it is stopped and disabled if the package started it.
if ! command -v etcd >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ] \
  && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server) \
    >/dev/null 2>&1 || echo "install: etcd-server could not be installed; etcd tests will skip"
  if [ -d /run/systemd/system ]; then
    systemctl disable --now etcd >/dev/null 2>&1 || true
  elif command -v service >/dev/null 2>&1; then
    service etcd stop >/dev/null 2>&1 || true
  fi
fi
# Prometheus's promtool for the metrics tests: unpacked from Debian's `prometheus` package into
# .tools/prometheus/ (never installed as a service), root on Debian only.
if [ ! -x .tools/prometheus/usr/bin/promtool ] && [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ] \
  && command -v apt-get >/dev/null 2>&1; then
  (
    set -e
    tmp=$(mktemp -d)
    cd "$tmp"
    apt-get download prometheus >/dev/null 2>&1 \
      || (apt-get update -qq && apt-get download prometheus >/dev/null 2>&1)
    dpkg-deb -x prometheus_*.deb unpacked
    mkdir -p "$OLDPWD/.tools/prometheus/usr/bin"
    cp unpacked/usr/bin/promtool "$OLDPWD/.tools/prometheus/usr/bin/"
    rm -rf "$tmp"
  ) || echo "install: promtool could not be unpacked; the metrics tests skip its check"
fi
# h2load (nghttp2-client), the gRPC benches' load generator (bench/grpc/h2load.ts); without
# it they fall back to slower Node.js generators and say so.
if ! command -v h2load >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ] \
  && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nghttp2-client) \
    >/dev/null 2>&1 || echo "install: h2load could not be installed; gRPC benches use Node.js load"
fi
# The esbuild bundle of the entry files (scripts/bundle.ts) that `deno task start` and
# `npm run start:bun` run while it is fresh (runtime/start.ts); rebuilt only when stale.
.tools/node_modules/.bin/deno run -A scripts/bundle.ts --if-stale >/dev/null \
  || echo "install: the bundle could not be built; the start commands run the sources"
