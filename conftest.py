"""Settings every test run needs, for unit tests and for the kernels nbval starts.

Kernels inherit this process's environment, so TensorFlow's start-up noise is silenced there
too. ``MPLBACKEND`` is removed because a kernel with ``MPLBACKEND=Agg`` stores no figures.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.pop("MPLBACKEND", None)
