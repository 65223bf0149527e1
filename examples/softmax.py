"""Row-wise softmax, y[i] = exp(x[i] - max x[i]) / sum(exp(x[i] - max x[i])): one program per row, the whole row
in registers, so memory sees x once and y once. The worked example of docs/writing-kernels.md."""

import torch
import triton
import triton.language as tl

from harness import KernelSpec, Plot, dim, dtype

SIZES = {"fp16": 2, "bf16": 2, "fp32": 4}
SPEC = KernelSpec(
    name="softmax",
    params=(dim("M"), dim("N"), dtype(("fp16", "bf16", "fp32"), "fp16")),
    flops=lambda p: 5.0 * p["M"] * p["N"],  # max, subtract, exp, sum, divide
    bytes=lambda p: 2.0 * p["M"] * p["N"] * SIZES[p["dtype"]],  # x read once, y written once
    peak="memory",
    dtype="{dtype}",
    tolerance={"fp16": 2e-3, "bf16": 1e-2, "fp32": 1e-5},
    default_config={"num_warps": 4},
    plot=Plot(x="N", series=("M",)),
)
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # no GPU: the harness runs Triton's interpreter


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, N, stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * stride
    offs = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row + offs, mask=offs < N, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row + offs, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=offs < N)


def make_inputs(params, seed):
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    x = torch.randn(params["M"], params["N"], generator=g, device=DEVICE).to(DTYPES[params["dtype"]])
    return {"x": x, "y": torch.empty_like(x)}


def launch(inputs, config):
    x, y = inputs["x"], inputs["y"]
    block = triton.next_power_of_2(x.shape[1])
    _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK_N=block, num_warps=config["num_warps"])
    return y


def reference(inputs):
    return torch.softmax(inputs["x"].double(), dim=-1)
