"""The IPEX variant's last build step: torch 2.8 and Intel Extension for PyTorch 2.8 import on a node without a GPU
(torch 2.8's Linux wheel links the CUDA runtime libraries, which its nvidia-* wheels provide), and ipexrun finds what
its distributed mode runs: lscpu for the CPU layout, ssh to check each node, mpiexec.hydra to start the ranks."""

import shutil

import intel_extension_for_pytorch as ipex
import numpy
import sklearn
import torch

assert torch.__version__.startswith("2.8."), torch.__version__
assert ipex.__version__.startswith("2.8."), ipex.__version__
missing = [tool for tool in ("ipexrun", "lscpu", "ssh", "mpiexec.hydra") if shutil.which(tool) is None]
assert not missing, f"not on PATH: {missing}"
print(f"torch {torch.__version__}, IPEX {ipex.__version__}, numpy {numpy.__version__}, scikit-learn {sklearn.__version__}")
