# Sourced by scripts/book and scripts/test: one idempotent set-up for a fresh machine.
#  - creates the virtual environment .venv (or $POSGEOM_VENV) if missing, with $PYTHON (default python3);
#  - installs posgeom with its book/test/nlp extras under the exact pins of requirements/constraints.txt,
#    again only when pyproject.toml or the pins changed (a stamp file remembers what was installed);
#  - decides where data and model come from and whether to go offline (posgeom.offline), or stops.
set -euo pipefail

POSGEOM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$POSGEOM_ROOT"
VENV="${POSGEOM_VENV:-$POSGEOM_ROOT/.venv}"
PYTHON="${PYTHON:-python3}"

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "posgeom needs Python >= 3.10 (found: $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating the virtual environment $VENV"
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.posgeom-install-stamp"
want="$(cat pyproject.toml requirements/constraints.txt | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "[setup] installing posgeom[book,test,nlp] with the pins of requirements/constraints.txt"
  # The constraints pin torch to 2.13.0: where a CPU wheel is on disk pip takes it; see README for other machines.
  # pip byte-compiles every installed file (about a third of the install's time on 2 cores). It stays: with
  # PYTHONDONTWRITEBYTECODE set (as on the CI machines) nothing compiled later is kept, and every process
  # would compile torch again at each import (measured: --no-compile saved 77 s of set-up and cost 166 s of
  # book build and 2-3x in the tests that start processes).
  "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet \
      -c requirements/constraints.txt -e ".[book,test,nlp]"
  echo "$want" >"$stamp"
else
  echo "[setup] reusing $VENV (already installed with these pins)"
fi
export PATH="$VENV/bin:$PATH"
export VIRTUAL_ENV="$VENV"

# Where the corpora and the pretrained model come from, and whether the Hugging Face libraries go
# offline, is decided by posgeom itself (posgeom/offline.py): the same decision that `import posgeom`
# makes in a kernel started by hand. Offline when the data (POSGEOM_DATA_DIR, or the data folder beside
# the checkout) and the model (by default the packaged all-MiniLM-L6-v2) are local, or POSGEOM_OFFLINE=1;
# otherwise online when the hub can be reached. When nothing can work it stops here, naming the fixes.
if ! decision="$(python -c 'import sys, posgeom.offline as o; sys.exit(o.main(["--shell"]))')"; then
  exit 1
fi
eval "$decision"
