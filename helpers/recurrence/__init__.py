"""The GRU question's track: threading state through a step model ``(frame, state) ->
(output, next_state)``, eagerly or in ``tf.function``, whole or truncated (``unroll``).
"""

from helpers.course.quiet_tensorflow import import_tensorflow

import_tensorflow()  # first, so TensorFlow's start-up log stays out

from helpers.recurrence.loop import check_step_model, keras_rnn_reference, unroll, zero_state

__all__ = [
    "check_step_model",
    "keras_rnn_reference",
    "unroll",
    "zero_state",
]
