"""Real files of tensorflow, jax, jaxlib, keras and nvidia-cudnn wheels (METADATA and
tensorflow/python/platform/build_info.py), byte for byte as their wheels install them (the metadata without its
Classifier, License-File, Project-URL and Dynamic lines), for the static framework-probe tests."""

from __future__ import annotations

# What every tensorflow/python/platform/build_info.py starts with, after its copyright line.
_APACHE_2_0 = (
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
)
_AUTO = "Auto-generated module providing information about the build."
_FUTURE = (
    "from __future__ import absolute_import\n"
    "from __future__ import division\n"
    "from __future__ import print_function\n"
)
_ORDERED_DICT = "import collections\n\nbuild_info = collections.OrderedDict"


def _build_info(year: int, docstring: str, body: str, license_text: bool = True) -> str:
    """tensorflow/python/platform/build_info.py as a wheel installs it: a blank line, the
    copyright line of `year` and the Apache-2.0 text (left out where `license_text` is False,
    as the Windows copy below has it shortened), the rule, the module's docstring, `body`."""
    header = f"\n# Copyright {year} The TensorFlow Authors. All Rights Reserved.\n"
    rule = "# " + "=" * 78 + "\n"
    return header + (_APACHE_2_0 if license_text else "") + rule + f'"""{docstring}"""\n' + body


def _tf_metadata(
    name: str, version: str, metadata: str, rest: str, before_2_4: bool = False
) -> str:
    """A tensorflow wheel's METADATA: its head as every release writes it (`metadata`: the
    Metadata-Version; before 2.4, Download-URL after License and a last Platform: UNKNOWN),
    then `rest`, the fields after Keywords as the wheel has them."""
    about = "Summary: TensorFlow is an open source machine learning framework for everyone.\n"
    about += "Home-page: https://www.tensorflow.org/\n"
    download = "Download-URL: https://github.com/tensorflow/tensorflow/tags\n"
    author = "Author: Google Inc.\nAuthor-email: packages@tensorflow.org\nLicense: Apache 2.0\n"
    keywords = "Keywords: tensorflow tensor machine learning\n"
    head = f"Metadata-Version: {metadata}\nName: {name}\nVersion: {version}\n" + about
    if before_2_4:
        head += author + download + keywords + "Platform: UNKNOWN\n"
    else:
        head += download + author + keywords
    return head + rest


# tensorflow 2.15.0, cp311 manylinux2014_x86_64 wheel from PyPI.

TENSORFLOW_2_15_0_METADATA = _tf_metadata(
    "tensorflow",
    "2.15.0",
    "2.1",
    """\
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
""",
)

TENSORFLOW_2_15_0_BUILD_INFO = _build_info(
    2020,
    _AUTO,
    _ORDERED_DICT
    + (
        "([('cpu_compiler', '/usr/lib/llvm-17/bin/clang'), ('cuda_compute_capabilities', ['sm_50', 'sm_60', 'sm_70', 'sm_75', 'compute_80']), ('cuda_version', '12.2'), ('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), ('is_tensorrt_build', True)])\n"
    ),
)

# tensorflow 2.3.0, cp38 manylinux2010_x86_64 wheel from PyPI: a plain dict.

TENSORFLOW_2_3_0_METADATA = _tf_metadata(
    "tensorflow",
    "2.3.0",
    "2.1",
    """\
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
""",
    before_2_4=True,
)

TENSORFLOW_2_3_0_BUILD_INFO = _build_info(
    2020,
    _AUTO,
    _FUTURE
    + (
        "\n"
        "build_info = {'cuda_version': '10.1', 'cudnn_version': '7', 'cuda_compute_capabilities': ['sm_35', 'sm_37', 'sm_52', 'sm_60', 'sm_61', 'compute_70'], 'cpu_compiler': '/usr/bin/gcc-5', 'is_rocm_build': False, 'is_cuda_build': True}\n"
    ),
)

# tensorflow-gpu 2.2.0, cp38 manylinux2010_x86_64 wheel from PyPI: module-level variables (and
# "10" for the CUDA 10.1 it was built with: what the build wrote).

TENSORFLOW_GPU_2_2_0_METADATA = _tf_metadata(
    "tensorflow-gpu",
    "2.2.0",
    "2.1",
    """\
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
""",
    before_2_4=True,
)

TENSORFLOW_GPU_2_2_0_BUILD_INFO = _build_info(
    2017,
    "Generates a Python module containing information about the build.",
    _FUTURE
    + (
        "\n"
        "is_rocm_build = False\n"
        "is_cuda_build = True\n"
        "\n"
        "cuda_version_number = '10'\n"
        "cudnn_version_number = '7'\n"
    ),
)

# tensorflow-cpu 2.21.0, cp311 manylinux_2_27_x86_64 wheel from PyPI.

TENSORFLOW_CPU_2_21_0_METADATA = _tf_metadata(
    "tensorflow_cpu",
    "2.21.0",
    "2.4",
    """\
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
""",
)

TENSORFLOW_CPU_2_21_0_BUILD_INFO = _build_info(
    2020,
    _AUTO,
    _ORDERED_DICT
    + ("([('is_cuda_build', False), ('is_rocm_build', False), ('is_tensorrt_build', False)])\n"),
)

# A Windows tensorflow 2.5-2.10 (CUDA 11.2, cuDNN 8) build_info.py, from a Windows
# site-packages (license header shortened): versions there are the DLL suffixes ("64_112" is
# cudart64_112.dll, CUDA 11.2).
TENSORFLOW_WINDOWS_BUILD_INFO = _build_info(
    2020,
    _AUTO,
    _ORDERED_DICT
    + (
        "([('cpu_compiler', 'C:/Program Files (x86)/Microsoft Visual Studio/2019/Community/VC/Tools/MSVC/14.27.29110/bin/HostX64/x64/cl.exe'), ('cuda_compute_capabilities', ['sm_35', 'sm_50', 'sm_60', 'sm_70', 'sm_75', 'compute_80']), ('cuda_version', '64_112'), ('cudart_dll_name', 'cudart64_112.dll'), ('cudnn_dll_name', 'cudnn64_8.dll'), ('cudnn_version', '64_8'), ('is_cuda_build', True), ('is_rocm_build', False), ('is_tensorrt_build', False), ('msvcp_dll_names', 'msvcp140.dll,msvcp140_1.dll'), ('nvcuda_dll_name', 'nvcuda.dll')])\n"
    ),
    license_text=False,
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
