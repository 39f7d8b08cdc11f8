# Shared by demo.sh and test.sh (sourced, not run): the project's .venv and Debian packages.

# apt_install PACKAGE...: install Debian packages (through sudo unless we are root).
apt_install() {
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

# ensure_venv SPEC: make .venv with $PYTHON (default python3) unless it exists, then install
# SPEC (e.g. "." or ".[dev]") into it in editable mode. A Debian/Ubuntu python3 without its
# venv module gets python3-venv first.
ensure_venv() {
  local python=${PYTHON:-python3}
  if [ ! -x .venv/bin/python ]; then
    if ! "$python" -m venv .venv >/dev/null 2>&1; then
      rm -rf .venv
      apt_install python3-venv
      "$python" -m venv .venv
    fi
  fi
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e "$1"
}
