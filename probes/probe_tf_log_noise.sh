#!/usr/bin/env bash
# Probe: which settings keep TensorFlow 2.21's import quiet on stderr (count of I-lines).
# Counts the CUDA stub lines too, and what is left through helpers.course.quiet_tensorflow.
# Run from the repository root with the course environment active.
PY=${PY:-python}
for envs in "" "TF_CPP_MIN_LOG_LEVEL=3" "TF_ENABLE_ONEDNN_OPTS=0" "TF_CPP_MIN_LOG_LEVEL=3 TF_ENABLE_ONEDNN_OPTS=0" "TF_CPP_MIN_LOG_LEVEL=2 TF_ENABLE_ONEDNN_OPTS=0"; do
  n=$(env $envs "$PY" -c "import tensorflow as tf; tf.Variable(1.0)+1" 2>&1 >/dev/null | grep -c "I0000")
  stub=$(env $envs "$PY" -c "import tensorflow as tf; tf.Variable(1.0)+1" 2>&1 >/dev/null | grep -c "cudart_stub")
  echo "[$envs] I-lines: $n (cudart_stub: $stub)"
done
n=$("$PY" -c "from helpers.course.quiet_tensorflow import import_tensorflow; tf = import_tensorflow(); tf.Variable(1.0)+1" 2>&1 >/dev/null | grep -c "[IWE]0000")
echo "[helpers.course.quiet_tensorflow first, the level import helpers sets] log lines: $n"
echo "CUDA toolkit libraries visible: $(ldconfig -p 2>/dev/null | grep -c 'libcudart')"
