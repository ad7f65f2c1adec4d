"""Array type aliases shared by the kernels (annotations only)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

F32Array = npt.NDArray[np.float32]
F64Array = npt.NDArray[np.float64]
I64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
