#!/usr/bin/env bash
# End to end with the official `openai` npm package: installs it (pinned in
# package.json) into WORK, then runs openai_e2e.mjs with node's test runner
# against `flashdraft serve` on the shipped models and the scripted server.
# Usage: run_e2e.sh FLASHDRAFT_BIN SCRIPTED_SERVER_BIN SOURCE_DIR WORK
set -euo pipefail
flashdraft=${1:?} scripted=${2:?} source_dir=${3:?} work=${4:?}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
if ! cmp -s "$here/package.json" "$work/package.json" || [[ ! -d $work/node_modules/openai ]]; then
  cp "$here/package.json" "$work/package.json"
  (cd "$work" && npm install --no-audit --no-fund --silent)
fi
cp "$here/openai_e2e.mjs" "$work/"
cd "$work"
FD_FLASHDRAFT_BIN=$flashdraft FD_SCRIPTED_SERVER_BIN=$scripted FD_SOURCE_DIR=$source_dir \
  node --test --test-reporter=spec openai_e2e.mjs
