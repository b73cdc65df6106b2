"""IPython start-up file for the kernels the test command starts (nbval's, the student
edition's, the browser tests'): the same garbage-collector setting as the test processes.

``conftest.py`` copies it into the test run's own IPython directory; a learner's kernels
never run it. It changes how often Python looks for reference cycles, never a result.
"""

import atexit
import gc

gc.set_threshold(10_000, 10, 10)  # TensorFlow's import makes ~10^6 objects: scan them less
atexit.register(gc.freeze)  # at exit, skip the last scan of every object still alive
del atexit, gc  # a start-up file runs in the notebook's namespace: leave nothing there
