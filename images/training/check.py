"""The training image's last build step: its Python stack imports (the build fails otherwise)."""

import numpy
import sklearn
import torch

print(f"torch {torch.__version__}, numpy {numpy.__version__}, scikit-learn {sklearn.__version__}")
