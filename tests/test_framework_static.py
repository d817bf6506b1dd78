"""The default (fast) framework pass: probes/scripts/framework_static.py, run by a target interpreter.

Each test lays out an installed tree the way pip installs real wheels (the package files, then
NAME-VERSION.dist-info with METADATA, WHEEL, INSTALLER, top_level.txt and RECORD) inside a real
virtual environment, and runs the script with that environment's own Python, as gpucheck runs
it. Unless a comment says otherwise, metadata headers, torch/version.py and
tensorflow/python/platform/build_info.py are byte for byte those of the real wheels their names
give (the metadata without its Classifier, License-File, Project-URL and Dynamic lines).

Every package __init__.py is a tripwire: the static pass must import no framework.
"""

from __future__ import annotations

import base64
import email.parser
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import pytest
from conftest import require_python38

import gpucheck.probes
from gpucheck.model.decoding import from_dict
from gpucheck.model.environments import Distribution, PythonEnvironment, TensorflowBuild, TorchBuild
from gpucheck.model.frameworks import static_probe_options
from gpucheck.probes.child import run_script

SCRIPT = Path(gpucheck.probes.__file__).resolve().parent / "scripts/framework_static.py"
OPTIONS = json.dumps(static_probe_options())  # gpucheck's framework table, as the probe gets it
STEPS = ["@ interpreter", "@ distributions", "@ torch", "@ tensorflow", "@ extensions"]
TORCH_CPU_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")

TRIPWIRE_ENV = "GPUCHECK_TEST_TRIPWIRE"
TRIPWIRE = (
    "import os\n"
    f"with open(os.environ[{TRIPWIRE_ENV!r}], 'a') as tripwire:\n"
    "    tripwire.write(__name__ + '\\n')\n"
    "raise SystemExit('the static framework pass imported ' + __name__)\n"
)

# --- real files ---------------------------------------------------------------------------
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

# tensorflow 2.15.0, cp311 manylinux2014_x86_64 wheel from PyPI.

TENSORFLOW_2_15_0_METADATA = """\
Metadata-Version: 2.1
Name: tensorflow
Version: 2.15.0
Summary: TensorFlow is an open source machine learning framework for everyone.
Home-page: https://www.tensorflow.org/
Download-URL: https://github.com/tensorflow/tensorflow/tags
Author: Google Inc.
Author-email: packages@tensorflow.org
License: Apache 2.0
Keywords: tensorflow tensor machine learning
Requires-Python: >=3.9
Description-Content-Type: text/markdown
Requires-Dist: absl-py (>=1.0.0)
Requires-Dist: astunparse (>=1.6.0)
Requires-Dist: flatbuffers (>=23.5.26)
Requires-Dist: gast (!=0.5.0,!=0.5.1,!=0.5.2,>=0.2.1)
Requires-Dist: google-pasta (>=0.1.1)
Requires-Dist: h5py (>=2.9.0)
Requires-Dist: libclang (>=13.0.0)
Requires-Dist: ml-dtypes (~=0.2.0)
Requires-Dist: numpy (<2.0.0,>=1.23.5)
Requires-Dist: opt-einsum (>=2.3.2)
Requires-Dist: packaging
Requires-Dist: protobuf (!=4.21.0,!=4.21.1,!=4.21.2,!=4.21.3,!=4.21.4,!=4.21.5,<5.0.0dev,>=3.20.3)
Requires-Dist: setuptools
Requires-Dist: six (>=1.12.0)
Requires-Dist: termcolor (>=1.1.0)
Requires-Dist: typing-extensions (>=3.6.6)
Requires-Dist: wrapt (<1.15,>=1.11.0)
Requires-Dist: tensorflow-io-gcs-filesystem (>=0.23.1)
Requires-Dist: grpcio (<2.0,>=1.24.3)
Requires-Dist: tensorboard (<2.16,>=2.15)
Requires-Dist: tensorflow-estimator (<2.16,>=2.15.0)
Requires-Dist: keras (<2.16,>=2.15.0)
Requires-Dist: tensorflow-cpu-aws (==2.15.0) ; platform_system == "Linux" and (platform_machine == "arm64" or platform_machine == "aarch64")
Requires-Dist: tensorflow-intel (==2.15.0) ; platform_system == "Windows"
Provides-Extra: and-cuda
Requires-Dist: nvidia-cublas-cu12 (==12.2.5.6) ; extra == 'and-cuda'
Requires-Dist: nvidia-cuda-cupti-cu12 (==12.2.142) ; extra == 'and-cuda'
Requires-Dist: nvidia-cuda-nvcc-cu12 (==12.2.140) ; extra == 'and-cuda'
Requires-Dist: nvidia-cuda-nvrtc-cu12 (==12.2.140) ; extra == 'and-cuda'
Requires-Dist: nvidia-cuda-runtime-cu12 (==12.2.140) ; extra == 'and-cuda'
Requires-Dist: nvidia-cudnn-cu12 (==8.9.4.25) ; extra == 'and-cuda'
Requires-Dist: nvidia-cufft-cu12 (==11.0.8.103) ; extra == 'and-cuda'
Requires-Dist: nvidia-curand-cu12 (==10.3.3.141) ; extra == 'and-cuda'
Requires-Dist: nvidia-cusolver-cu12 (==11.5.2.141) ; extra == 'and-cuda'
Requires-Dist: nvidia-cusparse-cu12 (==12.1.2.141) ; extra == 'and-cuda'
Requires-Dist: nvidia-nccl-cu12 (==2.16.5) ; extra == 'and-cuda'
Requires-Dist: nvidia-nvjitlink-cu12 (==12.2.140) ; extra == 'and-cuda'
Requires-Dist: tensorrt (==8.6.1.post1) ; extra == 'and-cuda'
Requires-Dist: tensorrt-bindings (==8.6.1) ; extra == 'and-cuda'
Requires-Dist: tensorrt-libs (==8.6.1) ; extra == 'and-cuda'
"""

TENSORFLOW_2_15_0_BUILD_INFO = (
    "\n"
    "# Copyright 2020 The TensorFlow Authors. All Rights Reserved.\n"
    "#\n"
    '# Licensed under the Apache License, Version 2.0 (the "License");\n'
    "# you may not use this file except in compliance with the License.\n"
    "# You may obtain a copy of the License at\n"
    "#\n"
    "#     http://www.apache.org/licenses/LICENSE-2.0\n"
    "#\n"
    "# Unless required by applicable law or agreed to in writing, software\n"
    '# distributed under the License is distributed on an "AS IS" BASIS,\n'
    "# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.\n"
    "# See the License for the specific language governing permissions and\n"
    "# limitations under the License.\n"
    "# ==============================================================================\n"
    '"""Auto-generated module providing information about the build."""\n'
    "import collections\n"
    "\n"
    "build_info = collections.OrderedDict([('cpu_compiler', '/usr/lib/llvm-17/bin/clang'), ('cuda_compute_capabilities', ['sm_50', 'sm_60', 'sm_70', 'sm_75', 'compute_80']), ('cuda_version', '12.2'), ('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), ('is_tensorrt_build', True)])\n"
)

# tensorflow 2.3.0, cp38 manylinux2010_x86_64 wheel from PyPI: a plain dict.

TENSORFLOW_2_3_0_METADATA = """\
Metadata-Version: 2.1
Name: tensorflow
Version: 2.3.0
Summary: TensorFlow is an open source machine learning framework for everyone.
Home-page: https://www.tensorflow.org/
Author: Google Inc.
Author-email: packages@tensorflow.org
License: Apache 2.0
Download-URL: https://github.com/tensorflow/tensorflow/tags
Keywords: tensorflow tensor machine learning
Platform: UNKNOWN
Requires-Dist: absl-py (>=0.7.0)
Requires-Dist: astunparse (==1.6.3)
Requires-Dist: gast (==0.3.3)
Requires-Dist: google-pasta (>=0.1.8)
Requires-Dist: h5py (<2.11.0,>=2.10.0)
Requires-Dist: keras-preprocessing (<1.2,>=1.1.1)
Requires-Dist: numpy (<1.19.0,>=1.16.0)
Requires-Dist: opt-einsum (>=2.3.2)
Requires-Dist: protobuf (>=3.9.2)
Requires-Dist: tensorboard (<3,>=2.3.0)
Requires-Dist: tensorflow-estimator (<2.4.0,>=2.3.0)
Requires-Dist: termcolor (>=1.1.0)
Requires-Dist: wrapt (>=1.11.1)
Requires-Dist: wheel (>=0.26)
Requires-Dist: six (>=1.12.0)
Requires-Dist: scipy (==1.4.1)
Requires-Dist: grpcio (>=1.8.6)
"""

TENSORFLOW_2_3_0_BUILD_INFO = (
    "\n"
    "# Copyright 2020 The TensorFlow Authors. All Rights Reserved.\n"
    "#\n"
    '# Licensed under the Apache License, Version 2.0 (the "License");\n'
    "# you may not use this file except in compliance with the License.\n"
    "# You may obtain a copy of the License at\n"
    "#\n"
    "#     http://www.apache.org/licenses/LICENSE-2.0\n"
    "#\n"
    "# Unless required by applicable law or agreed to in writing, software\n"
    '# distributed under the License is distributed on an "AS IS" BASIS,\n'
    "# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.\n"
    "# See the License for the specific language governing permissions and\n"
    "# limitations under the License.\n"
    "# ==============================================================================\n"
    '"""Auto-generated module providing information about the build."""\n'
    "from __future__ import absolute_import\n"
    "from __future__ import division\n"
    "from __future__ import print_function\n"
    "\n"
    "build_info = {'cuda_version': '10.1', 'cudnn_version': '7', 'cuda_compute_capabilities': ['sm_35', 'sm_37', 'sm_52', 'sm_60', 'sm_61', 'compute_70'], 'cpu_compiler': '/usr/bin/gcc-5', 'is_rocm_build': False, 'is_cuda_build': True}\n"
)

# tensorflow-gpu 2.2.0, cp38 manylinux2010_x86_64 wheel from PyPI: module-level variables (and
# "10" for the CUDA 10.1 it was built with: what the build wrote).

TENSORFLOW_GPU_2_2_0_METADATA = """\
Metadata-Version: 2.1
Name: tensorflow-gpu
Version: 2.2.0
Summary: TensorFlow is an open source machine learning framework for everyone.
Home-page: https://www.tensorflow.org/
Author: Google Inc.
Author-email: packages@tensorflow.org
License: Apache 2.0
Download-URL: https://github.com/tensorflow/tensorflow/tags
Keywords: tensorflow tensor machine learning
Platform: UNKNOWN
Requires-Dist: absl-py (>=0.7.0)
Requires-Dist: astunparse (==1.6.3)
Requires-Dist: gast (==0.3.3)
Requires-Dist: google-pasta (>=0.1.8)
Requires-Dist: h5py (<2.11.0,>=2.10.0)
Requires-Dist: keras-preprocessing (>=1.1.0)
Requires-Dist: numpy (<2.0,>=1.16.0)
Requires-Dist: opt-einsum (>=2.3.2)
Requires-Dist: protobuf (>=3.8.0)
Requires-Dist: tensorboard (<2.3.0,>=2.2.0)
Requires-Dist: tensorflow-estimator (<2.3.0,>=2.2.0)
Requires-Dist: termcolor (>=1.1.0)
Requires-Dist: wrapt (>=1.11.1)
Requires-Dist: six (>=1.12.0)
Requires-Dist: grpcio (>=1.8.6)
Requires-Dist: wheel ; python_version < "3"
Requires-Dist: mock (>=2.0.0) ; python_version < "3"
Requires-Dist: functools32 (>=3.2.3) ; python_version < "3"
Requires-Dist: scipy (==1.2.2) ; python_version < "3"
Requires-Dist: backports.weakref (>=1.0rc1) ; python_version < "3.4"
Requires-Dist: enum34 (>=1.1.6) ; python_version < "3.4"
Requires-Dist: wheel (>=0.26) ; python_version >= "3"
Requires-Dist: scipy (==1.4.1) ; python_version >= "3"
"""

TENSORFLOW_GPU_2_2_0_BUILD_INFO = (
    "\n"
    "# Copyright 2017 The TensorFlow Authors. All Rights Reserved.\n"
    "#\n"
    '# Licensed under the Apache License, Version 2.0 (the "License");\n'
    "# you may not use this file except in compliance with the License.\n"
    "# You may obtain a copy of the License at\n"
    "#\n"
    "#     http://www.apache.org/licenses/LICENSE-2.0\n"
    "#\n"
    "# Unless required by applicable law or agreed to in writing, software\n"
    '# distributed under the License is distributed on an "AS IS" BASIS,\n'
    "# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.\n"
    "# See the License for the specific language governing permissions and\n"
    "# limitations under the License.\n"
    "# ==============================================================================\n"
    '"""Generates a Python module containing information about the build."""\n'
    "from __future__ import absolute_import\n"
    "from __future__ import division\n"
    "from __future__ import print_function\n"
    "\n"
    "is_rocm_build = False\n"
    "is_cuda_build = True\n"
    "\n"
    "cuda_version_number = '10'\n"
    "cudnn_version_number = '7'\n"
)

# tensorflow-cpu 2.21.0, cp311 manylinux_2_27_x86_64 wheel from PyPI.

TENSORFLOW_CPU_2_21_0_METADATA = """\
Metadata-Version: 2.4
Name: tensorflow_cpu
Version: 2.21.0
Summary: TensorFlow is an open source machine learning framework for everyone.
Home-page: https://www.tensorflow.org/
Download-URL: https://github.com/tensorflow/tensorflow/tags
Author: Google Inc.
Author-email: packages@tensorflow.org
License: Apache 2.0
Keywords: tensorflow tensor machine learning
Requires-Python: >=3.10
Description-Content-Type: text/markdown
Requires-Dist: absl-py>=1.0.0
Requires-Dist: astunparse>=1.6.0
Requires-Dist: flatbuffers>=25.9.23
Requires-Dist: gast!=0.5.0,!=0.5.1,!=0.5.2,>=0.2.1
Requires-Dist: google_pasta>=0.1.1
Requires-Dist: libclang>=13.0.0
Requires-Dist: opt_einsum>=2.3.2
Requires-Dist: packaging
Requires-Dist: protobuf<8.0.0,>=6.31.1
Requires-Dist: requests<3,>=2.21.0
Requires-Dist: setuptools
Requires-Dist: six>=1.12.0
Requires-Dist: termcolor>=1.1.0
Requires-Dist: typing_extensions>=3.6.6
Requires-Dist: wrapt>=1.11.0
Requires-Dist: grpcio<2.0,>=1.24.3
Requires-Dist: keras>=3.12.0
Requires-Dist: numpy>=1.26.0
Requires-Dist: h5py<3.15.0,>=3.11.0
Requires-Dist: ml_dtypes<1.0.0,>=0.5.1
Provides-Extra: and-cuda
Requires-Dist: nvidia-cublas-cu12<13.0,>=12.5.3.2; extra == "and-cuda"
Requires-Dist: nvidia-cuda-cupti-cu12<13.0,>=12.5.82; extra == "and-cuda"
Requires-Dist: nvidia-cuda-nvcc-cu12<13.0,>=12.5.82; extra == "and-cuda"
Requires-Dist: nvidia-cuda-nvrtc-cu12<13.0,>=12.5.82; extra == "and-cuda"
Requires-Dist: nvidia-cuda-runtime-cu12<13.0,>=12.5.82; extra == "and-cuda"
Requires-Dist: nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == "and-cuda"
Requires-Dist: nvidia-cufft-cu12<12.0,>=11.2.3.61; extra == "and-cuda"
Requires-Dist: nvidia-curand-cu12<11.0,>=10.3.6.82; extra == "and-cuda"
Requires-Dist: nvidia-cusolver-cu12<12.0,>=11.6.3.83; extra == "and-cuda"
Requires-Dist: nvidia-cusparse-cu12<13.0,>=12.5.1.3; extra == "and-cuda"
Requires-Dist: nvidia-nccl-cu12<3.0,>=2.27.7; extra == "and-cuda"
Requires-Dist: nvidia-nvjitlink-cu12<13.0,>=12.5.82; extra == "and-cuda"
Provides-Extra: gcs-filesystem
Requires-Dist: tensorflow-io-gcs-filesystem>=0.23.1; (sys_platform != "win32" and python_version < "3.13") and extra == "gcs-filesystem"
Requires-Dist: tensorflow-io-gcs-filesystem>=0.23.1; (sys_platform == "win32" and python_version < "3.12") and extra == "gcs-filesystem"
"""

TENSORFLOW_CPU_2_21_0_BUILD_INFO = (
    "\n"
    "# Copyright 2020 The TensorFlow Authors. All Rights Reserved.\n"
    "#\n"
    '# Licensed under the Apache License, Version 2.0 (the "License");\n'
    "# you may not use this file except in compliance with the License.\n"
    "# You may obtain a copy of the License at\n"
    "#\n"
    "#     http://www.apache.org/licenses/LICENSE-2.0\n"
    "#\n"
    "# Unless required by applicable law or agreed to in writing, software\n"
    '# distributed under the License is distributed on an "AS IS" BASIS,\n'
    "# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.\n"
    "# See the License for the specific language governing permissions and\n"
    "# limitations under the License.\n"
    "# ==============================================================================\n"
    '"""Auto-generated module providing information about the build."""\n'
    "import collections\n"
    "\n"
    "build_info = collections.OrderedDict([('is_cuda_build', False), ('is_rocm_build', False), ('is_tensorrt_build', False)])\n"
)

# A Windows tensorflow 2.5-2.10 (CUDA 11.2, cuDNN 8) build_info.py, from a Windows
# site-packages (license header shortened): versions there are the DLL suffixes ("64_112" is
# cudart64_112.dll, CUDA 11.2).
TENSORFLOW_WINDOWS_BUILD_INFO = (
    "\n"
    "# Copyright 2020 The TensorFlow Authors. All Rights Reserved.\n"
    "# ==============================================================================\n"
    '"""Auto-generated module providing information about the build."""\n'
    "import collections\n"
    "\n"
    "build_info = collections.OrderedDict([('cpu_compiler', 'C:/Program Files (x86)/Microsoft Visual Studio/2019/Community/VC/Tools/MSVC/14.27.29110/bin/HostX64/x64/cl.exe'), ('cuda_compute_capabilities', ['sm_35', 'sm_50', 'sm_60', 'sm_70', 'sm_75', 'compute_80']), ('cuda_version', '64_112'), ('cudart_dll_name', 'cudart64_112.dll'), ('cudnn_dll_name', 'cudnn64_8.dll'), ('cudnn_version', '64_8'), ('is_cuda_build', True), ('is_rocm_build', False), ('is_tensorrt_build', False), ('msvcp_dll_names', 'msvcp140.dll,msvcp140_1.dll'), ('nvcuda_dll_name', 'nvcuda.dll')])\n"
)

# jax 0.10.2, jaxlib 0.10.2 (cp311 manylinux_2_27_x86_64), keras 3.15.1 and
# nvidia-cudnn-cu13 9.24.0.43, from PyPI.

JAX_0_10_2_METADATA = """\
Metadata-Version: 2.4
Name: jax
Version: 0.10.2
Summary: Differentiate, compile, and transform Numpy code.
Home-page: https://github.com/jax-ml/jax
Author: JAX team
Author-email: jax-dev@google.com
License: Apache-2.0
Requires-Python: >=3.11
Description-Content-Type: text/markdown
Requires-Dist: jaxlib<=0.10.2,>=0.10.1
Requires-Dist: ml_dtypes>=0.5.0
Requires-Dist: numpy>=2.0
Requires-Dist: opt_einsum
Requires-Dist: scipy>=1.14
Provides-Extra: minimum-jaxlib
Requires-Dist: jaxlib==0.10.1; extra == "minimum-jaxlib"
Provides-Extra: cpu
Provides-Extra: ci
Requires-Dist: jaxlib==0.10.1; extra == "ci"
Provides-Extra: tpu
Requires-Dist: jaxlib<=0.10.2,>=0.10.2; extra == "tpu"
Requires-Dist: libtpu==0.0.42.*; extra == "tpu"
Requires-Dist: requests; extra == "tpu"
Provides-Extra: cuda
Requires-Dist: jaxlib<=0.10.2,>=0.10.2; extra == "cuda"
Requires-Dist: jax-cuda12-plugin[with-cuda]<=0.10.2,>=0.10.2; extra == "cuda"
Provides-Extra: cuda12
Requires-Dist: jaxlib<=0.10.2,>=0.10.2; extra == "cuda12"
Requires-Dist: jax-cuda12-plugin[with-cuda]<=0.10.2,>=0.10.2; extra == "cuda12"
Provides-Extra: cuda13
Requires-Dist: jaxlib<=0.10.2,>=0.10.2; extra == "cuda13"
Requires-Dist: jax-cuda13-plugin[with-cuda]<=0.10.2,>=0.10.2; extra == "cuda13"
Provides-Extra: cuda12-local
Requires-Dist: jaxlib<=0.10.2,>=0.10.2; extra == "cuda12-local"
Requires-Dist: jax-cuda12-plugin<=0.10.2,>=0.10.2; extra == "cuda12-local"
Provides-Extra: cuda13-local
Requires-Dist: jaxlib<=0.10.2,>=0.10.2; extra == "cuda13-local"
Requires-Dist: jax-cuda13-plugin<=0.10.2,>=0.10.2; extra == "cuda13-local"
Provides-Extra: rocm7-local
Requires-Dist: jaxlib<=0.10.2,>=0.10.2; extra == "rocm7-local"
Requires-Dist: jax-rocm7-plugin==0.10.2.*; extra == "rocm7-local"
Provides-Extra: k8s
Requires-Dist: kubernetes; extra == "k8s"
Provides-Extra: xprof
Requires-Dist: xprof; extra == "xprof"
"""

JAXLIB_0_10_2_METADATA = """\
Metadata-Version: 2.4
Name: jaxlib
Version: 0.10.2
Summary: XLA library for JAX
Home-page: https://github.com/jax-ml/jax
Author: JAX team
Author-email: jax-dev@google.com
License: Apache-2.0
Requires-Python: >=3.11
Description-Content-Type: text/markdown
Requires-Dist: scipy>=1.14
Requires-Dist: numpy>=2.0
Requires-Dist: ml_dtypes>=0.5.0
"""

KERAS_3_15_1_METADATA = """\
Metadata-Version: 2.4
Name: keras
Version: 3.15.1
Summary: Multi-backend Keras
Author-email: Keras team <keras-users@googlegroups.com>
License: Apache License 2.0
Requires-Python: >=3.11
Description-Content-Type: text/markdown
Requires-Dist: absl-py
Requires-Dist: numpy
Requires-Dist: rich
Requires-Dist: namex
Requires-Dist: h5py
Requires-Dist: optree
Requires-Dist: ml-dtypes
Requires-Dist: packaging
"""

NVIDIA_CUDNN_CU13_9_24_0_43_METADATA = """\
Metadata-Version: 2.4
Name: nvidia-cudnn-cu13
Version: 9.24.0.43
Summary: cuDNN runtime libraries
Home-page: https://developer.nvidia.com/cuda-zone
Author: Nvidia CUDA Installer Team
Author-email: compute_installer@nvidia.com
License-Expression: LicenseRef-NVIDIA-Proprietary
Keywords: cuda,nvidia,runtime,machine learning,deep learning
Requires-Python: >=3
Description-Content-Type: text/plain
Requires-Dist: nvidia-cublas
"""

# --- building installed trees ---------------------------------------------------------------


@dataclass
class Venv:
    root: Path
    python: Path
    site: Path  # its site-packages

    @property
    def site_real(self) -> str:
        return os.path.realpath(self.site)


def make_venv(where: Path, base: str = sys.executable) -> Venv:
    """A real virtual environment (no pip: nothing in it but what a test installs)."""
    subprocess.run(
        [base, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True
    )
    python = where / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return Venv(where, python, Path(site))


def header(metadata: str, key: str) -> str:
    return next(
        line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith(key + ": ")
    )


def requires_of(metadata: str) -> list[str]:
    """The Requires-Dist values, verbatim, in file order."""
    return [
        line.split(": ", 1)[1]
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist: ")
    ]


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


WHEEL_CP311 = "Wheel-Version: 1.0\nGenerator: bdist_wheel (0.34.2)\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n\n"
WHEEL_PURE = "Wheel-Version: 1.0\nGenerator: setuptools (75.1.0)\nRoot-Is-Purelib: true\nTag: py3-none-any\n\n"


def install(
    site: Path,
    metadata: str,
    files: Mapping[str, str] | None = None,
    *,
    top_level: str | None = None,
    wheel: str = WHEEL_CP311,
    folder: str | None = None,
) -> Path:
    """Install one wheel as pip does: its files, then NAME-VERSION.dist-info, RECORD last."""
    name, version = header(metadata, "Name"), header(metadata, "Version")
    info = folder or f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"
    contents = dict(files or {})
    contents[f"{info}/METADATA"] = metadata + f"\n{name} {version}: the long description.\n"
    contents[f"{info}/WHEEL"] = wheel
    contents[f"{info}/INSTALLER"] = "pip\n"
    if top_level is not None:
        contents[f"{info}/top_level.txt"] = top_level
    lines = []
    for rel, text in contents.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode()
        path.write_bytes(data)
        lines.append(record_line(rel, data))
    lines.append(f"{info}/RECORD,,")
    (site / info / "RECORD").write_text("\n".join(lines) + "\n")
    return site / info


def simple_metadata(name: str, version: str, *requires: str, summary: str = "A package.") -> str:
    """Metadata as a setuptools-built wheel writes it (for packages only named in these tests)."""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        f"Summary: {summary}",
        "Requires-Python: >=3",
        *(f"Requires-Dist: {r}" for r in requires),
    ]
    return "\n".join(lines) + "\n"


def torch_files(version_py: str) -> dict[str, str]:
    return {
        "torch/__init__.py": TRIPWIRE,
        "torch/version.py": version_py,
        "torch/cuda/__init__.py": TRIPWIRE,
        "functorch/__init__.py": TRIPWIRE,
        "torchgen/__init__.py": TRIPWIRE,
    }


def tensorflow_files(build_info: str) -> dict[str, str]:
    return {
        "tensorflow/__init__.py": TRIPWIRE,
        "tensorflow/python/__init__.py": TRIPWIRE,
        "tensorflow/python/platform/__init__.py": TRIPWIRE,
        "tensorflow/python/platform/build_info.py": build_info,
    }


def install_torch(site: Path, metadata: str, version_py: str, **kwargs: Any) -> Path:
    return install(
        site, metadata, torch_files(version_py), top_level="functorch\ntorch\ntorchgen\n", **kwargs
    )


def install_tensorflow(site: Path, metadata: str, build_info: str) -> Path:
    return install(site, metadata, tensorflow_files(build_info), top_level="tensorflow\n")


def install_nvidia(site: Path, name: str, version: str, *requires: str) -> Path:
    """An NVIDIA CUDA wheel: a folder of libraries in the `nvidia` namespace."""
    component = re.sub(r"-cu\d+$", "", name[len("nvidia-") :]).replace("-", "_")
    files = {
        "nvidia/__init__.py": "",
        f"nvidia/{component}/__init__.py": "",
        f"nvidia/{component}/lib/lib{component}.so": "not a real library\n",
    }
    meta = simple_metadata(name, version, *requires, summary="CUDA libraries")
    meta = meta.replace(
        "Requires-Python",
        "Home-page: https://developer.nvidia.com/cuda-zone\nAuthor: Nvidia CUDA Installer Team\nLicense: NVIDIA Proprietary Software\nRequires-Python",
    )
    return install(
        site,
        meta,
        files,
        top_level="nvidia\n",
        wheel=WHEEL_PURE.replace("py3-none-any", "py3-none-manylinux2014_x86_64"),
    )


def install_plain(site: Path, name: str, version: str, *requires: str) -> Path:
    """A package that does not matter here (numpy, filelock, ...)."""
    module = re.sub(r"[-.]", "_", name.lower())
    return install(
        site,
        simple_metadata(name, version, *requires),
        {f"{module}/__init__.py": ""},
        top_level=module + "\n",
        wheel=WHEEL_PURE,
    )


def pinned(metadata: str, prefix: str) -> list[tuple[str, str]]:
    """(name, version) of every `NAME (==VERSION)` requirement starting with prefix."""
    return re.findall(rf"^Requires-Dist: ({prefix}[a-z0-9-]*) \(==([^)]+)\)", metadata, re.M)


TORCH_2_5_1_CUDA_WHEELS = pinned(TORCH_2_5_1_METADATA, "nvidia-")
TORCH_1_13_1_CUDA_WHEELS = pinned(TORCH_1_13_1_METADATA, "nvidia-")
TENSORFLOW_2_15_0_CUDA_WHEELS = pinned(TENSORFLOW_2_15_0_METADATA, "nvidia-")


def install_torch_2_5_1_stack(site: Path) -> None:
    """`pip install torch==2.5.1` on Linux x86_64: torch, its CUDA wheels, triton, the rest."""
    install_torch(site, TORCH_2_5_1_METADATA, TORCH_2_5_1_VERSION_PY)
    for name, version in TORCH_2_5_1_CUDA_WHEELS:
        # cuDNN, cuSOLVER and cuSPARSE wheels require other CUDA wheels themselves.
        requires = {
            "nvidia-cudnn-cu12": ["nvidia-cublas-cu12"],
            "nvidia-cusolver-cu12": [
                "nvidia-cublas-cu12",
                "nvidia-nvjitlink-cu12",
                "nvidia-cusparse-cu12",
            ],
            "nvidia-cusparse-cu12": ["nvidia-nvjitlink-cu12"],
        }.get(name, [])
        install_nvidia(site, name, version, *requires)
    install(
        site,
        simple_metadata(
            "triton",
            "3.1.0",
            "filelock",
            summary="A language and compiler for custom Deep Learning operations",
        ),
        {"triton/__init__.py": TRIPWIRE},
        top_level="triton\n",
    )
    for name, version in [
        ("filelock", "3.16.1"),
        ("typing_extensions", "4.12.2"),
        ("sympy", "1.13.1"),
        ("networkx", "3.4.2"),
        ("Jinja2", "3.1.4"),
        ("fsspec", "2024.10.0"),
    ]:
        install_plain(site, name, version)


# --- running the probe ----------------------------------------------------------------------


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env[TRIPWIRE_ENV] = str(tmp_path / "imported.txt")
    return env


def probe(python: Path | str, tmp_path: Path, **extra_env: str) -> dict[str, Any]:
    """Run the script as gpucheck does; check the protocol; return the facts."""
    env = clean_env(tmp_path)
    env.update(extra_env)
    proc = subprocess.run(
        [str(python), str(SCRIPT), OPTIONS],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == STEPS, proc.stderr  # step lines only
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout  # exactly one JSON line
    record = json.loads(lines[0])
    assert set(record) == {"kind", "facts"}
    assert record["kind"] == "environment"
    facts: dict[str, Any] = record["facts"]
    assert set(facts) == {
        "version",
        "prefix",
        "platform",
        "site_packages",
        "distributions",
        "torch",
        "tensorflow",
        "extensions",
        "errors",
    }
    imported = tmp_path / "imported.txt"
    assert not imported.exists(), f"imported: {imported.read_text()}"
    return facts


def decode(facts: dict[str, Any]) -> PythonEnvironment:
    """The facts read back as gpucheck's own dataclass, as the parent process will."""
    fields = {k: v for k, v in facts.items() if k != "errors"}
    return from_dict(PythonEnvironment, {"python": "x", "origin": "gpucheck", **fields})


def dist(
    name: str, version: str, location: str, requires: list[str] | None = None
) -> dict[str, Any]:
    return {"name": name, "version": version, "location": location, "requires": requires or []}


def by_name(dists: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Within one site folder the order is the file system's: compare sorted."""
    return sorted(dists, key=lambda d: (d["name"], d["version"]))


def check_interpreter(facts: dict[str, Any], venv: Venv, version: str | None = None) -> None:
    assert facts["version"] == (version or platform.python_version())
    assert os.path.realpath(facts["prefix"]) == os.path.realpath(venv.root)
    assert facts["platform"] == sys.platform
    assert facts["site_packages"] == [venv.site_real]


# --- torch ------------------------------------------------------------------------------------


def test_torch_cuda_build_and_its_cuda_wheels(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_torch_2_5_1_stack(venv.site)

    facts = probe(venv.python, tmp_path)

    check_interpreter(facts, venv)
    site = venv.site_real
    # Only what matters is listed; requirements only for the framework, verbatim.
    assert by_name(facts["distributions"]) == by_name(
        [dist("torch", "2.5.1", site, requires_of(TORCH_2_5_1_METADATA))]
        + [dist(name, version, site) for name, version in TORCH_2_5_1_CUDA_WHEELS]
        + [dist("triton", "3.1.0", site)]
    )
    torch_dist = next(d for d in facts["distributions"] if d["name"] == "torch")
    assert (
        'nvidia-cudnn-cu12 (==9.1.0.70) ; platform_system == "Linux" and platform_machine == "x86_64"'
        in torch_dist["requires"]
    )
    assert "opt-einsum (>=3.3) ; extra == 'opt-einsum'" in torch_dist["requires"]
    assert len(TORCH_2_5_1_CUDA_WHEELS) == 12
    # The dist says 2.5.1; the build says which CUDA.
    assert facts["torch"] == {
        "version": "2.5.1+cu124",
        "cuda": "12.4",
        "hip": None,
        "git_version": "a8d6afb511a69687bbb2b7e88a3cf67917e1697e",
        "path": os.path.join(site, "torch", "version.py"),
    }
    assert facts["tensorflow"] is None
    assert facts["errors"] == []

    env = decode(facts)
    assert env.torch == TorchBuild(
        "2.5.1+cu124",
        "12.4",
        None,
        "a8d6afb511a69687bbb2b7e88a3cf67917e1697e",
        os.path.join(site, "torch", "version.py"),
    )
    assert env.dist("nvidia-cudnn-cu12") == Distribution("nvidia-cudnn-cu12", "9.1.0.70", site, [])
    torch = env.dist("torch")
    assert torch is not None and torch.requires == requires_of(TORCH_2_5_1_METADATA)
    assert env.site_packages == [site] and env.tensorflow is None


def test_torch_1_13_plain_assignments(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_torch(venv.site, TORCH_1_13_1_METADATA, TORCH_1_13_1_VERSION_PY)
    for name, version in TORCH_1_13_1_CUDA_WHEELS:
        install_nvidia(venv.site, name, version)
    install_plain(venv.site, "typing_extensions", "4.7.1")

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert by_name(facts["distributions"]) == by_name(
        [dist("torch", "1.13.1", site, requires_of(TORCH_1_13_1_METADATA))]
        + [dist(name, version, site) for name, version in TORCH_1_13_1_CUDA_WHEELS]
    )
    assert {n for n, _ in TORCH_1_13_1_CUDA_WHEELS} == {
        "nvidia-cuda-runtime-cu11",
        "nvidia-cudnn-cu11",
        "nvidia-cublas-cu11",
        "nvidia-cuda-nvrtc-cu11",
    }
    assert facts["torch"] == {
        "version": "1.13.1+cu117",
        "cuda": "11.7",
        "hip": None,
        "git_version": "49444c3e546bf240bed24a101e747422d1f8a0ee",
        "path": os.path.join(site, "torch", "version.py"),
    }
    assert facts["errors"] == []
    assert decode(facts).torch == TorchBuild(
        "1.13.1+cu117",
        "11.7",
        None,
        "49444c3e546bf240bed24a101e747422d1f8a0ee",
        os.path.join(site, "torch", "version.py"),
    )


def test_torch_cpu_build(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_torch(venv.site, TORCH_2_13_0_CPU_METADATA, TORCH_2_13_0_CPU_VERSION_PY)

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert (venv.site / "torch-2.13.0+cpu.dist-info").is_dir()  # the local version in the name
    assert facts["distributions"] == [
        dist("torch", "2.13.0+cpu", site, requires_of(TORCH_2_13_0_CPU_METADATA))
    ]
    assert facts["torch"] == {
        "version": "2.13.0+cpu",
        "cuda": None,
        "hip": None,
        "git_version": "cf30153c4c131c8164ee7798e5022d810682e2cb",
        "path": os.path.join(site, "torch", "version.py"),
    }
    assert facts["errors"] == []
    assert decode(facts).torch == TorchBuild(
        "2.13.0+cpu",
        None,
        None,
        "cf30153c4c131c8164ee7798e5022d810682e2cb",
        os.path.join(site, "torch", "version.py"),
    )


def test_torch_rocm_build(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_torch(venv.site, TORCH_2_5_1_ROCM_METADATA, TORCH_2_5_1_ROCM_VERSION_PY)
    install(
        venv.site,
        simple_metadata("pytorch-triton-rocm", "3.1.0", "filelock"),
        {"triton/__init__.py": TRIPWIRE},
        top_level="triton\n",
    )

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    # ROCm's Triton is not NVIDIA's business: not listed.
    assert facts["distributions"] == [
        dist("torch", "2.5.1+rocm6.2", site, requires_of(TORCH_2_5_1_ROCM_METADATA))
    ]
    assert facts["torch"] == {
        "version": "2.5.1+rocm6.2",
        "cuda": None,
        "hip": "6.2.41133-dd7f95766",
        "git_version": "a8d6afb511a69687bbb2b7e88a3cf67917e1697e",
        "path": os.path.join(site, "torch", "version.py"),
    }
    assert facts["errors"] == []
    build = decode(facts).torch
    assert build is not None and build.hip == "6.2.41133-dd7f95766"


@pytest.mark.skipif(
    not TORCH_CPU_WHEEL.is_file(), reason=f"{TORCH_CPU_WHEEL} is not on this machine"
)
def test_the_real_cpu_wheels_own_files(tmp_path: Path) -> None:
    """version.py and the whole dist-info folder taken out of the real wheel, unchanged."""
    venv = make_venv(tmp_path / "venv")
    with zipfile.ZipFile(TORCH_CPU_WHEEL) as wheel:
        members = [
            n
            for n in wheel.namelist()
            if n == "torch/version.py" or n.startswith("torch-2.13.0+cpu.dist-info/")
        ]
        wheel.extractall(venv.site, members)
        real_metadata = wheel.read("torch-2.13.0+cpu.dist-info/METADATA").decode()
    (venv.site / "torch" / "__init__.py").write_text(TRIPWIRE)

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    requires = email.parser.HeaderParser().parsestr(real_metadata).get_all("Requires-Dist")
    assert facts["distributions"] == [dist("torch", "2.13.0+cpu", site, requires)]
    assert requires and 'pyyaml; extra == "pyyaml"' in requires
    assert facts["torch"] == {
        "version": "2.13.0+cpu",
        "cuda": None,
        "hip": None,
        "git_version": "cf30153c4c131c8164ee7798e5022d810682e2cb",
        "path": os.path.join(site, "torch", "version.py"),
    }
    assert facts["errors"] == []
    assert decode(facts).dist("torch") == Distribution("torch", "2.13.0+cpu", site, requires)


# --- tensorflow ---------------------------------------------------------------------------------


def test_tensorflow_2_15_dict_with_compute_capabilities(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    # `pip install tensorflow[and-cuda]==2.15.0`
    install_tensorflow(venv.site, TENSORFLOW_2_15_0_METADATA, TENSORFLOW_2_15_0_BUILD_INFO)
    for name, version in TENSORFLOW_2_15_0_CUDA_WHEELS:
        install_nvidia(venv.site, name, version)
    install(
        venv.site,
        simple_metadata("keras", "2.15.0", summary="Deep learning for humans."),
        {"keras/__init__.py": TRIPWIRE},
        top_level="keras\n",
        wheel=WHEEL_PURE,
    )
    install_plain(venv.site, "tensorboard", "2.15.2", "absl-py>=0.4")
    install_plain(venv.site, "tensorflow-estimator", "2.15.0")
    install_plain(venv.site, "tensorflow-io-gcs-filesystem", "0.37.1")
    install_plain(venv.site, "tensorrt", "8.6.1.post1")

    facts = probe(venv.python, tmp_path)

    check_interpreter(facts, venv)
    site = venv.site_real
    assert by_name(facts["distributions"]) == by_name(
        [
            dist("tensorflow", "2.15.0", site, requires_of(TENSORFLOW_2_15_0_METADATA)),
            dist("keras", "2.15.0", site),
            dist("tensorrt", "8.6.1.post1", site),  # read for the TensorRT checks
        ]
        + [dist(name, version, site) for name, version in TENSORFLOW_2_15_0_CUDA_WHEELS]
    )
    tf_requires = next(d for d in facts["distributions"] if d["name"] == "tensorflow")["requires"]
    assert "nvidia-cudnn-cu12 (==8.9.4.25) ; extra == 'and-cuda'" in tf_requires
    assert facts["tensorflow"] == {
        "is_cuda_build": True,
        "is_rocm_build": False,
        "cuda_version": "12.2",
        "cudnn_version": "8",
        "cuda_compute_capabilities": ["sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        "path": os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    }
    assert facts["torch"] is None
    assert facts["errors"] == []
    assert decode(facts).tensorflow == TensorflowBuild(
        True,
        False,
        "12.2",
        "8",
        ["sm_50", "sm_60", "sm_70", "sm_75", "compute_80"],
        os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    )


def test_tensorflow_2_3_plain_dict(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_tensorflow(venv.site, TENSORFLOW_2_3_0_METADATA, TENSORFLOW_2_3_0_BUILD_INFO)

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert facts["distributions"] == [
        dist("tensorflow", "2.3.0", site, requires_of(TENSORFLOW_2_3_0_METADATA))
    ]
    assert facts["tensorflow"] == {
        "is_cuda_build": True,
        "is_rocm_build": False,
        "cuda_version": "10.1",
        "cudnn_version": "7",
        "cuda_compute_capabilities": ["sm_35", "sm_37", "sm_52", "sm_60", "sm_61", "compute_70"],
        "path": os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    }
    assert facts["errors"] == []
    decode(facts)


def test_tensorflow_gpu_2_2_module_level_variables(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_tensorflow(venv.site, TENSORFLOW_GPU_2_2_0_METADATA, TENSORFLOW_GPU_2_2_0_BUILD_INFO)

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert (venv.site / "tensorflow_gpu-2.2.0.dist-info").is_dir()
    assert facts["distributions"] == [
        dist("tensorflow-gpu", "2.2.0", site, requires_of(TENSORFLOW_GPU_2_2_0_METADATA))
    ]
    assert (
        'backports.weakref (>=1.0rc1) ; python_version < "3.4"'
        in facts["distributions"][0]["requires"]
    )
    assert facts["tensorflow"] == {
        "is_cuda_build": True,
        "is_rocm_build": False,
        "cuda_version": "10",
        "cudnn_version": "7",
        "cuda_compute_capabilities": [],
        "path": os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    }
    assert facts["errors"] == []
    assert decode(facts).tensorflow == TensorflowBuild(
        True,
        False,
        "10",
        "7",
        [],
        os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    )


def test_tensorflow_cpu_build(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_tensorflow(venv.site, TENSORFLOW_CPU_2_21_0_METADATA, TENSORFLOW_CPU_2_21_0_BUILD_INFO)
    install(
        venv.site,
        KERAS_3_15_1_METADATA,
        {"keras/__init__.py": TRIPWIRE},
        top_level="keras\n",
        wheel=WHEEL_PURE,
    )

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    # "tensorflow_cpu" in its metadata, normalised; it installs the same tensorflow/ folder.
    assert by_name(facts["distributions"]) == [
        dist("keras", "3.15.1", site),
        dist("tensorflow-cpu", "2.21.0", site, requires_of(TENSORFLOW_CPU_2_21_0_METADATA)),
    ]
    assert facts["tensorflow"] == {
        "is_cuda_build": False,
        "is_rocm_build": False,
        "cuda_version": None,
        "cudnn_version": None,
        "cuda_compute_capabilities": [],
        "path": os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    }
    assert facts["errors"] == []
    assert decode(facts).tensorflow == TensorflowBuild(
        False,
        False,
        None,
        None,
        [],
        os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    )


def test_windows_build_info_dll_suffixes_are_read_as_versions(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_tensorflow(
        venv.site,
        simple_metadata("tensorflow-gpu", "2.10.0", "numpy>=1.20"),
        TENSORFLOW_WINDOWS_BUILD_INFO,
    )

    facts = probe(venv.python, tmp_path)

    assert facts["tensorflow"]["cuda_version"] == "11.2"
    assert facts["tensorflow"]["cudnn_version"] == "8"
    assert facts["tensorflow"]["is_cuda_build"] is True
    assert facts["tensorflow"]["cuda_compute_capabilities"] == [
        "sm_35",
        "sm_50",
        "sm_60",
        "sm_70",
        "sm_75",
        "compute_80",
    ]
    assert facts["errors"] == []


# --- other frameworks, names, duplicates ----------------------------------------------------------


def test_jax_cupy_and_the_names_that_matter(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install(
        venv.site,
        JAX_0_10_2_METADATA,
        {"jax/__init__.py": TRIPWIRE},
        top_level="jax\n",
        wheel=WHEEL_PURE,
    )
    install(
        venv.site, JAXLIB_0_10_2_METADATA, {"jaxlib/__init__.py": TRIPWIRE}, top_level="jaxlib\n"
    )
    # jax[cuda12] 0.4.35: the plugin and its PJRT runtime (their real Requires-Dist lines).
    plugin = simple_metadata(
        "jax-cuda12-plugin",
        "0.4.35",
        "jax-cuda12-pjrt==0.4.35",
        'nvidia-cublas-cu12>=12.1.3.1; extra == "with-cuda"',
        'nvidia-cudnn-cu12<10.0,>=9.1; extra == "with-cuda"',
    )
    install(
        venv.site,
        plugin.replace("jax-cuda12-plugin", "jax_cuda12_plugin", 1),
        {"jax_cuda12_plugin/__init__.py": TRIPWIRE},
        top_level="jax_cuda12_plugin\n",
    )
    install(
        venv.site,
        simple_metadata("jax-cuda12-pjrt", "0.4.35"),
        {"jax_plugins/xla_cuda12/__init__.py": TRIPWIRE},
        top_level="jax_plugins\n",
    )
    install(
        venv.site,
        simple_metadata("cupy-cuda12x", "13.3.0", "numpy<2.3,>=1.22", "fastrlock>=0.5"),
        {"cupy/__init__.py": TRIPWIRE},
        top_level="cupy\ncupy_backends\ncupyx\n",
    )
    install(
        venv.site,
        simple_metadata("tf_keras", "2.15.0", "tensorflow<2.16,>=2.15"),
        {"tf_keras/__init__.py": TRIPWIRE},
        top_level="tf_keras\n",
        wheel=WHEEL_PURE,
    )
    install(
        venv.site,
        NVIDIA_CUDNN_CU13_9_24_0_43_METADATA,
        {"nvidia/cu13/__init__.py": ""},
        top_level="nvidia\n",
    )
    install(
        venv.site,
        simple_metadata("nvidia-ml-py", "12.560.30"),
        {"pynvml.py": ""},
        top_level="pynvml\n",
        wheel=WHEEL_PURE,
    )
    for name, version in [
        ("numpy", "2.1.3"),
        ("scipy", "1.14.1"),
        ("ml_dtypes", "0.5.0"),
        ("opt_einsum", "3.4.0"),
        ("cuda-python", "12.6.0"),
        ("torchvision", "0.20.1"),
    ]:
        install_plain(venv.site, name, version)

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert by_name(facts["distributions"]) == by_name(
        [
            dist("jax", "0.10.2", site, requires_of(JAX_0_10_2_METADATA)),
            dist("jaxlib", "0.10.2", site, requires_of(JAXLIB_0_10_2_METADATA)),
            dist("jax-cuda12-plugin", "0.4.35", site, requires_of(plugin)),
            dist("jax-cuda12-pjrt", "0.4.35", site),
            dist("cupy-cuda12x", "13.3.0", site, ["numpy<2.3,>=1.22", "fastrlock>=0.5"]),
            dist("tf-keras", "2.15.0", site),  # what it requires is not kept
            dist("nvidia-cudnn-cu13", "9.24.0.43", site),
            dist("nvidia-ml-py", "12.560.30", site),
            dist("numpy", "2.1.3", site),  # its C ABI (frameworks.numpy-abi)
            dist("torchvision", "0.20.1", site),  # an extension built against torch
        ]
    )
    assert facts["extensions"] == [
        {
            "name": "torchvision",
            "version": "0.20.1",
            "cuda": None,
            "torch": None,
            "cxx11_abi": None,
            "source": None,
        }
    ]
    assert facts["torch"] is None and facts["tensorflow"] is None
    assert facts["errors"] == []
    decode(facts)


def test_the_same_name_in_two_site_folders_is_listed_twice(tmp_path: Path) -> None:
    """An old torch in a folder on PYTHONPATH shadows the venv's: both listed, import order."""
    venv = make_venv(tmp_path / "venv")
    install_torch(venv.site, TORCH_2_5_1_METADATA, TORCH_2_5_1_VERSION_PY)
    # A leftover of an interrupted upgrade: the old dist-info beside the new one.
    install(
        venv.site,
        simple_metadata("torch", "2.4.0", "filelock"),
        top_level="functorch\ntorch\ntorchgen\n",
    )
    # pip's own stash of an uninstall it did not finish ("~orch"): pip ignores it, so do we.
    install(venv.site, simple_metadata("torch", "2.3.1"), folder="~orch-2.3.1.dist-info")
    other = (
        tmp_path
        / "home"
        / ".local"
        / "lib"
        / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        / "site-packages"
    )
    install_torch(other, TORCH_1_13_1_METADATA, TORCH_1_13_1_VERSION_PY)

    facts = probe(venv.python, tmp_path, PYTHONPATH=str(other))

    site, other_real = venv.site_real, os.path.realpath(other)
    assert facts["site_packages"] == [other_real, site]  # sys.path order
    dists = facts["distributions"]
    assert dists[0] == dist("torch", "1.13.1", other_real, requires_of(TORCH_1_13_1_METADATA))
    assert by_name(dists[1:]) == [
        dist("torch", "2.4.0", site, ["filelock"]),
        dist("torch", "2.5.1", site, requires_of(TORCH_2_5_1_METADATA)),
    ]
    # The build is the one `import torch` would load: the first on sys.path.
    assert facts["torch"]["version"] == "1.13.1+cu117"
    assert facts["torch"]["path"] == os.path.join(other_real, "torch", "version.py")
    assert facts["errors"] == []
    assert decode(facts).distributions[0].version == "1.13.1"


def test_a_source_checkout_installed_in_develop_mode(tmp_path: Path) -> None:
    """`python setup.py develop` in a PyTorch checkout: an egg-link and torch.egg-info there."""
    venv = make_venv(tmp_path / "venv")
    checkout = tmp_path / "pytorch"
    (checkout / "torch").mkdir(parents=True)
    (checkout / "torch" / "__init__.py").write_text(TRIPWIRE)
    # As tools/generate_torch_version.py writes it for a local CUDA build.
    (checkout / "torch" / "version.py").write_text(
        "from typing import Optional\n\n"
        "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
        "__version__ = '2.6.0a0+git1eba9b3'\n"
        "debug = False\n"
        "cuda: Optional[str] = '12.4'\n"
        "git_version = '1eba9b3aa3c43f86f4a2c807ac8e12c4a7767340'\n"
        "hip: Optional[str] = None\n"
    )
    egg_info = checkout / "torch.egg-info"
    egg_info.mkdir()
    (egg_info / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.6.0a0+git1eba9b3\nSummary: Tensors and Dynamic neural networks in Python with strong GPU acceleration\n"
    )
    (egg_info / "requires.txt").write_text(
        'filelock\ntyping-extensions>=4.8.0\nnetworkx\njinja2\nfsspec\n\n[:python_version >= "3.12"]\nsetuptools\n\n[opt-einsum]\nopt-einsum>=3.3\n'
    )
    (egg_info / "top_level.txt").write_text("functorch\ntorch\ntorchgen\n")
    (venv.site / "torch.egg-link").write_text(f"{checkout}\n.")
    (venv.site / "easy-install.pth").write_text(f"{checkout}\n")

    facts = probe(venv.python, tmp_path)

    where = os.path.realpath(checkout)
    assert facts["distributions"] == [
        dist(
            "torch",
            "2.6.0a0+git1eba9b3",
            where,
            [
                "filelock",
                "typing-extensions>=4.8.0",
                "networkx",
                "jinja2",
                "fsspec",
                'setuptools; python_version >= "3.12"',
                'opt-einsum>=3.3; extra == "opt-einsum"',
            ],
        )
    ]
    assert facts["torch"] == {
        "version": "2.6.0a0+git1eba9b3",
        "cuda": "12.4",
        "hip": None,
        "git_version": "1eba9b3aa3c43f86f4a2c807ac8e12c4a7767340",
        "path": os.path.join(where, "torch", "version.py"),
    }
    assert facts["errors"] == []


# --- robustness -----------------------------------------------------------------------------------


def test_build_files_are_parsed_never_run(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    run_me = (
        f"\nopen(__import__('os').environ[{TRIPWIRE_ENV!r}], 'a').write('executed ' + __file__)\n"
    )
    install_torch(venv.site, TORCH_2_5_1_METADATA, TORCH_2_5_1_VERSION_PY + run_me)
    install_tensorflow(venv.site, TENSORFLOW_2_15_0_METADATA, TENSORFLOW_2_15_0_BUILD_INFO + run_me)

    facts = probe(venv.python, tmp_path)  # checks that the tripwire file was never written

    assert facts["torch"]["cuda"] == "12.4"
    assert facts["tensorflow"]["cuda_version"] == "12.2"
    assert facts["errors"] == []


def test_broken_files_are_errors_not_a_crash(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    # A disk that filled up half-way through version.py.
    truncated = TORCH_2_5_1_VERSION_PY[: TORCH_2_5_1_VERSION_PY.index("'12.4'") + 3]
    install_torch(venv.site, TORCH_2_5_1_METADATA, truncated)
    # tensorflow's metadata, but its package folder removed by hand.
    install_tensorflow(venv.site, TENSORFLOW_2_15_0_METADATA, TENSORFLOW_2_15_0_BUILD_INFO)
    shutil.rmtree(venv.site / "tensorflow")
    # An interrupted install: an empty dist-info folder.
    (venv.site / "nvidia_cudnn_cu12-9.1.0.70.dist-info").mkdir()

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert by_name(facts["distributions"]) == [
        dist("tensorflow", "2.15.0", site, requires_of(TENSORFLOW_2_15_0_METADATA)),
        dist("torch", "2.5.1", site, requires_of(TORCH_2_5_1_METADATA)),
    ]
    assert facts["torch"] is None
    assert facts["tensorflow"] is None
    version_py = os.path.join(site, "torch", "version.py")
    errors = sorted(facts["errors"])
    assert len(errors) == 3, errors
    assert errors[0].startswith(
        f"distribution {os.path.join(venv.site, 'nvidia_cudnn_cu12-9.1.0.70.dist-info')}: no Name"
    ), errors
    assert (
        errors[1]
        == f"tensorflow: no tensorflow/python/platform/build_info.py in {os.path.join(site, 'tensorflow')}"
    )
    assert errors[2].startswith(f"torch: {version_py}: SyntaxError: "), errors
    env = decode(facts)
    assert env.torch is None and env.tensorflow is None


def test_an_environment_without_frameworks(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_plain(venv.site, "scipy", "1.14.1")

    facts = probe(venv.python, tmp_path)

    check_interpreter(facts, venv)
    assert facts["distributions"] == []
    assert facts["torch"] is None and facts["tensorflow"] is None
    assert facts["errors"] == []
    assert decode(facts) == PythonEnvironment(
        "x",
        "gpucheck",
        platform.python_version(),
        facts["prefix"],
        sys.platform,
        site_packages=[venv.site_real],
    )


def test_this_interpreter(tmp_path: Path) -> None:
    """gpucheck's own environment: nvidia-ml-py (a dependency) is there."""
    facts = probe(sys.executable, tmp_path)

    assert facts["version"] == platform.python_version()
    assert facts["prefix"] == sys.prefix
    assert facts["platform"] == sys.platform
    nvml = importlib_metadata.distribution("nvidia-ml-py")
    location = os.path.realpath(str(nvml.locate_file("")))
    assert dist("nvidia-ml-py", nvml.version, location) in facts["distributions"]
    assert location in facts["site_packages"]
    assert not any(p == str(SCRIPT.parent) for p in facts["site_packages"])
    decode(facts)


def test_the_child_protocol_reads_it(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    install_torch(venv.site, TORCH_2_5_1_METADATA, TORCH_2_5_1_VERSION_PY)

    env = clean_env(tmp_path)
    result = run_script(SCRIPT, [OPTIONS], timeout=60, python=str(venv.python), env=env)

    assert result.ok and result.status == "ok", result.describe(60)
    assert result.last_step == "extensions" and result.message == ""
    assert len(result.records) == 1 and result.records[0]["kind"] == "environment"
    facts = result.records[0]["facts"]
    assert isinstance(facts, dict) and facts["torch"]["cuda"] == "12.4"


def test_python_3_8(tmp_path: Path) -> None:
    """The oldest interpreter supported: torch 1.13.1 and tensorflow 2.3.0, both cp38 wheels."""
    venv = make_venv(tmp_path / "venv38", base=require_python38())
    install_torch(
        venv.site,
        TORCH_1_13_1_METADATA,
        TORCH_1_13_1_VERSION_PY,
        wheel=WHEEL_CP311.replace("cp311", "cp38"),
    )
    for name, version in TORCH_1_13_1_CUDA_WHEELS:
        install_nvidia(venv.site, name, version)
    install_tensorflow(venv.site, TENSORFLOW_2_3_0_METADATA, TENSORFLOW_2_3_0_BUILD_INFO)

    facts = probe(venv.python, tmp_path)

    site = venv.site_real
    assert re.fullmatch(r"3\.8\.\d+", facts["version"])
    check_interpreter(facts, venv, version=facts["version"])
    assert site.endswith(os.path.join("lib", "python3.8", "site-packages"))
    assert by_name(facts["distributions"]) == by_name(
        [
            dist("torch", "1.13.1", site, requires_of(TORCH_1_13_1_METADATA)),
            dist("tensorflow", "2.3.0", site, requires_of(TENSORFLOW_2_3_0_METADATA)),
        ]
        + [dist(name, version, site) for name, version in TORCH_1_13_1_CUDA_WHEELS]
    )
    assert facts["torch"] == {
        "version": "1.13.1+cu117",
        "cuda": "11.7",
        "hip": None,
        "git_version": "49444c3e546bf240bed24a101e747422d1f8a0ee",
        "path": os.path.join(site, "torch", "version.py"),
    }
    assert facts["tensorflow"] == {
        "is_cuda_build": True,
        "is_rocm_build": False,
        "cuda_version": "10.1",
        "cudnn_version": "7",
        "cuda_compute_capabilities": ["sm_35", "sm_37", "sm_52", "sm_60", "sm_61", "compute_70"],
        "path": os.path.join(site, "tensorflow", "python", "platform", "build_info.py"),
    }
    assert facts["errors"] == []
    decode(facts)
