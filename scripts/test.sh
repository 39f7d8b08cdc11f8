#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: makes .venv, installs runjournal with its dev
# extra, installs the Debian packages the tests need when they are missing (chromium for the
# browser tests, PostgreSQL 15 server binaries for the PostgreSQL tests), then runs pytest.
# PostgreSQL tests start their own throw-away cluster from /usr/lib/postgresql/15/bin.
# Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_setup.sh
ensure_venv '.[dev]'
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium chromium-driver)
[ -x /usr/lib/postgresql/15/bin/initdb ] || missing+=(postgresql-15)
if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
fi
exec .venv/bin/python -m pytest "$@"
