#!/usr/bin/env bash
# The brief's scenarios (../shared/acceptance/, see its README) as a gate of `make test`: every
# executable there runs from the project root against this checkout's .venv; any failure fails.
set -uo pipefail
cd "$(dirname "$0")/.."
dir="${RUNDIFF_ACCEPTANCE:-../shared/acceptance}"
if [ ! -d "$dir" ]; then
  echo "acceptance: $dir not found — the brief's scenarios must run (set RUNDIFF_ACCEPTANCE=DIR)" >&2
  exit 1
fi
export RUNDIFF="$PWD/.venv/bin/rundiff" PYTHON="$PWD/.venv/bin/python"
failed=0 ran=0
for f in "$dir"/*; do
  [ -f "$f" ] && [ -x "$f" ] || continue
  ran=$((ran + 1))
  if ! "$f"; then
    failed=$((failed + 1))
  fi
done
if [ "$ran" -eq 0 ]; then
  echo "acceptance: no executable scenario in $dir" >&2
  exit 1
fi
echo "acceptance: $((ran - failed))/$ran scenarios pass"
[ "$failed" -eq 0 ]
