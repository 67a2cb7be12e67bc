"""The training image's last build step: its Python stack imports (the build fails otherwise)."""

import shutil

import numpy
import sklearn
import torch

print(f"torch {torch.__version__}, numpy {numpy.__version__}, scikit-learn {sklearn.__version__}")

# py-spy dumps a stalled rank's Python stack (the launcher role's stall watchdog).
assert shutil.which("py-spy"), "py-spy is not on PATH"
