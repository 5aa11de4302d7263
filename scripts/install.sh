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
