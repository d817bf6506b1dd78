"""Real files of torch wheels (METADATA and torch/version.py), byte for byte as their wheels install them (the metadata without its
Classifier, License-File, Project-URL and Dynamic lines), for the static framework-probe tests."""

from __future__ import annotations

# torch 2.5.1, cp311 manylinux1_x86_64 wheel from PyPI (CUDA 12.4 build).

TORCH_2_5_1_METADATA = """\
Metadata-Version: 2.1
Name: torch
Version: 2.5.1
Summary: Tensors and Dynamic neural networks in Python with strong GPU acceleration
Home-page: https://pytorch.org/
Download-URL: https://github.com/pytorch/pytorch/tags
Author: PyTorch Team
Author-email: packages@pytorch.org
License: BSD-3-Clause
Keywords: pytorch,machine learning
Requires-Python: >=3.8.0
Description-Content-Type: text/markdown
Requires-Dist: filelock
Requires-Dist: typing-extensions (>=4.8.0)
Requires-Dist: networkx
Requires-Dist: jinja2
Requires-Dist: fsspec
Requires-Dist: nvidia-cuda-nvrtc-cu12 (==12.4.127) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cuda-runtime-cu12 (==12.4.127) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cuda-cupti-cu12 (==12.4.127) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cudnn-cu12 (==9.1.0.70) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cublas-cu12 (==12.4.5.8) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cufft-cu12 (==11.2.1.3) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-curand-cu12 (==10.3.5.147) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cusolver-cu12 (==11.6.1.9) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cusparse-cu12 (==12.3.1.170) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-nccl-cu12 (==2.21.5) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-nvtx-cu12 (==12.4.127) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-nvjitlink-cu12 (==12.4.127) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: triton (==3.1.0) ; platform_system == "Linux" and platform_machine == "x86_64" and python_version < "3.13"
Requires-Dist: sympy (==1.12.1) ; python_version == "3.8"
Requires-Dist: setuptools ; python_version >= "3.12"
Requires-Dist: sympy (==1.13.1) ; python_version >= "3.9"
Provides-Extra: opt-einsum
Requires-Dist: opt-einsum (>=3.3) ; extra == 'opt-einsum'
Provides-Extra: optree
Requires-Dist: optree (>=0.12.0) ; extra == 'optree'
"""

TORCH_2_5_1_VERSION_PY = (
    "from typing import Optional\n"
    "\n"
    "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
    "__version__ = '2.5.1+cu124'\n"
    "debug = False\n"
    "cuda: Optional[str] = '12.4'\n"
    "git_version = 'a8d6afb511a69687bbb2b7e88a3cf67917e1697e'\n"
    "hip: Optional[str] = None\n"
)

# torch 1.13.1, cp38 manylinux1_x86_64 wheel from PyPI (CUDA 11.7 build, plain assignments).

TORCH_1_13_1_METADATA = """\
Metadata-Version: 2.1
Name: torch
Version: 1.13.1
Summary: Tensors and Dynamic neural networks in Python with strong GPU acceleration
Home-page: https://pytorch.org/
Author: PyTorch Team
Author-email: packages@pytorch.org
License: BSD-3
Download-URL: https://github.com/pytorch/pytorch/tags
Keywords: pytorch,machine learning
Platform: UNKNOWN
Requires-Python: >=3.7.0
Description-Content-Type: text/markdown
Requires-Dist: typing-extensions
Requires-Dist: nvidia-cuda-runtime-cu11 (==11.7.99) ; platform_system == "Linux"
Requires-Dist: nvidia-cudnn-cu11 (==8.5.0.96) ; platform_system == "Linux"
Requires-Dist: nvidia-cublas-cu11 (==11.10.3.66) ; platform_system == "Linux"
Requires-Dist: nvidia-cuda-nvrtc-cu11 (==11.7.99) ; platform_system == "Linux"
Provides-Extra: opt-einsum
Requires-Dist: opt-einsum (>=3.3) ; extra == 'opt-einsum'
"""

TORCH_1_13_1_VERSION_PY = (
    "__version__ = '1.13.1+cu117'\n"
    "debug = False\n"
    "cuda = '11.7'\n"
    "git_version = '49444c3e546bf240bed24a101e747422d1f8a0ee'\n"
    "hip = None\n"
)

# torch 2.13.0+cpu, cp311 manylinux_2_28_x86_64 wheel from download.pytorch.org/whl/cpu.

TORCH_2_13_0_CPU_METADATA = """\
Metadata-Version: 2.4
Name: torch
Version: 2.13.0+cpu
Summary: Tensors and Dynamic neural networks in Python with strong GPU acceleration
Author-email: PyTorch Team <packages@pytorch.org>
License-Expression: Apache-2.0 AND Apache-2.0 WITH LLVM-exception AND BSD-2-Clause AND BSD-3-Clause AND BSL-1.0 AND MIT
Keywords: pytorch,machine learning
Requires-Python: >=3.10
Description-Content-Type: text/markdown
Requires-Dist: filelock
Requires-Dist: typing-extensions>=4.10.0
Requires-Dist: setuptools>=77.0.3
Requires-Dist: sympy>=1.13.3
Requires-Dist: networkx>=2.5.1
Requires-Dist: jinja2
Requires-Dist: fsspec>=0.8.5
Provides-Extra: optree
Requires-Dist: optree>=0.13.0; extra == "optree"
Provides-Extra: opt-einsum
Requires-Dist: opt-einsum>=3.3; extra == "opt-einsum"
Provides-Extra: pyyaml
Requires-Dist: pyyaml; extra == "pyyaml"
"""

TORCH_2_13_0_CPU_VERSION_PY = (
    "from typing import Optional\n"
    "\n"
    "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']\n"
    "__version__ = '2.13.0+cpu'\n"
    "debug = False\n"
    "cuda: Optional[str] = None\n"
    "git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'\n"
    "hip: Optional[str] = None\n"
    "rocm: Optional[str] = None\n"
    "xpu: Optional[str] = None\n"
)

# torch 2.5.1+rocm6.2 (download.pytorch.org/whl/rocm6.2, not reachable when these tests were
# written): version.py as tools/generate_torch_version.py writes it for a ROCm build (the same
# commit as the CUDA wheel, cuda None, hip the HIP version of ROCm 6.2.0); METADATA modelled on
# the CUDA wheel's, with ROCm's Triton in place of the CUDA wheels.
TORCH_2_5_1_ROCM_VERSION_PY = (
    "from typing import Optional\n"
    "\n"
    "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
    "__version__ = '2.5.1+rocm6.2'\n"
    "debug = False\n"
    "cuda: Optional[str] = None\n"
    "git_version = 'a8d6afb511a69687bbb2b7e88a3cf67917e1697e'\n"
    "hip: Optional[str] = '6.2.41133-dd7f95766'\n"
)
TORCH_2_5_1_ROCM_METADATA = """\
Metadata-Version: 2.1
Name: torch
Version: 2.5.1+rocm6.2
Summary: Tensors and Dynamic neural networks in Python with strong GPU acceleration
Home-page: https://pytorch.org/
Author: PyTorch Team
Author-email: packages@pytorch.org
License: BSD-3-Clause
Requires-Python: >=3.8.0
Requires-Dist: filelock
Requires-Dist: typing-extensions>=4.8.0
Requires-Dist: networkx
Requires-Dist: jinja2
Requires-Dist: fsspec
Requires-Dist: pytorch-triton-rocm==3.1.0; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: sympy==1.13.1; python_version >= "3.9"
Provides-Extra: opt-einsum
Requires-Dist: opt-einsum>=3.3; extra == "opt-einsum"
"""
