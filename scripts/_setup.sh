# Shared by demo.sh and test.sh (sourced, not run): the project's .venv and Debian packages.

# apt_install PACKAGE...: install Debian packages (through sudo unless we are root).
apt_install() {
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

# python_ok PYTHON: whether PYTHON runs and is Python 3.11 or newer.
python_ok() {
  "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1
}

# ensure_venv SPEC: make .venv with $PYTHON (default python3) unless it exists, then install
# SPEC (e.g. "." or ".[dev]") into it in editable mode. A Debian/Ubuntu python3 without its
# venv module gets python3-venv first. A .venv of an older Python than 3.11 (left by an
# earlier attempt) is made again; a $PYTHON that is missing or too old stops with one line.
ensure_venv() {
  local python=${PYTHON:-python3}
  if [ -e .venv ] && ! python_ok .venv/bin/python; then
    rm -rf .venv
  fi
  if [ ! -x .venv/bin/python ]; then
    if ! python_ok "$python"; then
      echo "runjournal needs Python 3.11 or newer; '$python' is missing or older:" \
        "set PYTHON=/path/to/python3.11 (or newer)" >&2
      return 1
    fi
    if ! "$python" -m venv .venv >/dev/null 2>&1; then
      rm -rf .venv
      apt_install python3-venv
      "$python" -m venv .venv
    fi
  fi
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e "$1"
}
