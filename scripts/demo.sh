#!/usr/bin/env bash
# Runs the offline demo on a fresh machine: makes .venv, installs runjournal, then runs
# `runjournal demo` (a real agent run with summarization, journaled into SQLite, then its
# timeline). Arguments go to `runjournal demo` (e.g. --store URL).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_setup.sh
ensure_venv .
exec .venv/bin/runjournal demo "$@"
