"""The learned router's model as ONNX: exported from the numpy `Mlp` with onnx's helpers, run by
onnxruntime.

The graph is the model's forward pass, node for node: Sub(mean), Div(scale), then per layer a
Gemm, a Relu between layers, and a Sigmoid at the end. Input `rows` is float32 (N, inputs), output
`probability` float32 (N, 1). The layout version and the input width are stored in the model's
metadata, and checked when it is loaded.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from server.core.routing.mlp import Mlp

OPSET = 17
IR_VERSION = 8  # what onnxruntime 1.20 and later all read


class ModelError(ValueError):
    """A model file that is not a router model of this layout."""


def export(mlp: Mlp, layout: int, version: str) -> bytes:
    """The serialised ONNX model of `mlp`."""
    # Imported here: onnx (with ml_dtypes) takes about a second to import, and only training
    # exports a model; the server only runs them, on onnxruntime.
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [
        numpy_helper.from_array(mlp.mean.astype(np.float32), "mean"),
        numpy_helper.from_array(mlp.scale.astype(np.float32), "scale"),
    ]
    nodes = [
        helper.make_node("Sub", ["rows", "mean"], ["centred"]),
        helper.make_node("Div", ["centred", "scale"], ["h0"]),
    ]
    last = len(mlp.weights) - 1
    for i, (w, b) in enumerate(zip(mlp.weights, mlp.biases, strict=True)):
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"w{i}"))
        inits.append(numpy_helper.from_array(b.astype(np.float32), f"b{i}"))
        out = f"g{i}"
        nodes.append(helper.make_node("Gemm", [f"h{i}", f"w{i}", f"b{i}"], [out]))
        nodes.append(
            helper.make_node(
                "Relu" if i < last else "Sigmoid",
                [out],
                [f"h{i + 1}" if i < last else "probability"],
            )
        )
    graph = helper.make_graph(
        nodes,
        "pocketd_router",
        [helper.make_tensor_value_info("rows", TensorProto.FLOAT, ["n", mlp.inputs])],
        [helper.make_tensor_value_info("probability", TensorProto.FLOAT, ["n", 1])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="pocketd"
    )
    model.ir_version = IR_VERSION
    helper.set_model_props(
        model, {"layout": str(layout), "inputs": str(mlp.inputs), "version": version}
    )
    onnx.checker.check_model(model)
    data: bytes = model.SerializeToString()
    return data


class OnnxPocketModel:
    """A `PocketModel`: one onnxruntime session, one thread (a decision scores a few dozen rows;
    more threads only add their start-up)."""

    def __init__(self, data: bytes, layout: int, inputs: int) -> None:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        try:
            self._session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime raises its own exception types
            raise ModelError(f"not an ONNX model onnxruntime can load: {e}") from e
        meta = self._session.get_modelmeta().custom_metadata_map
        if meta.get("layout") != str(layout) or meta.get("inputs") != str(inputs):
            raise ModelError(
                f"a model of layout {meta.get('layout')} with {meta.get('inputs')} inputs;"
                f" this server feeds layout {layout} with {inputs} inputs (retrain it)"
            )
        self._version = str(meta.get("version", ""))

    @property
    def version(self) -> str:
        return self._version

    def score(self, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        (out,) = self._session.run(["probability"], {"rows": np.ascontiguousarray(rows)})
        p: npt.NDArray[np.float32] = np.asarray(out, np.float32)[:, 0]
        return p
