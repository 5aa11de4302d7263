#!/usr/bin/env bash
# The whole suite: format, lint and type checks, then every test under Deno (unit tests
# beside the code, cross-process tests in tests/ that start brokers on Deno and Bun).
# Ends with one line "N passed, N failed" (Deno's runner does not print that form).
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.tools/node_modules/.bin:$PATH"
passed=0
failed=0
check() {
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
    echo "check $name ... ok"
  else
    failed=$((failed + 1))
    echo "check $name ... FAILED"
  fi
}
check "deno fmt --check" deno fmt --check
check "deno lint" deno lint
check "deno check" deno check runtime/ storage/ functions/ tests/ bench/ client/ tools/ examples/ cli/
check "tsc --erasableSyntaxOnly (client/)" node_modules/.bin/tsc --noEmit --strict --erasableSyntaxOnly --allowImportingTsExtensions --verbatimModuleSyntax --target es2022 --module esnext --moduleResolution bundler --lib es2022,dom --skipLibCheck client/mod.ts client/webhooks.ts client/consumer.ts
check "deno publish --dry-run (client/)" bash -c "cd client && deno publish --dry-run --allow-dirty"
log=$(mktemp)
deno test -A --parallel "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -aE '^(ok|FAILED) \| [0-9]+ passed' | tail -n 1)
rm -f "$log"
if [ -z "$summary" ]; then
  echo "deno test printed no summary (exit $status)"
  failed=$((failed + 1))
else
  t_passed=$(echo "$summary" | sed -E 's/.*\| ([0-9]+) passed.*/\1/')
  t_failed=$(echo "$summary" | sed -E 's/.*\| ([0-9]+) failed.*/\1/')
  passed=$((passed + t_passed))
  failed=$((failed + t_failed))
  if [ "$status" -ne 0 ] && [ "$t_failed" -eq 0 ]; then failed=$((failed + 1)); fi
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
