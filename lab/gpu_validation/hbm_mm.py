"""The roofline's two single-GPU ceilings, measured on this GPU, as --ceilings YAML lines on stdout: HBM
(a 4 GiB device-to-device copy, bytes read + written, TB/s) and bf16 matrix rate (8192³ torch.mm in bf16 and fp16, TFLOP/s), each
the median of 10 timed runs after 3 warm-ups, on random data (zeros run faster)."""

from __future__ import annotations

import statistics

import torch


def _median_ms(fn, n: int = 10) -> float:  # noqa: ANN001
    for _ in range(3):
        fn()
    ts = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)


def main() -> None:
    src = torch.randint(0, 255, (4 << 30,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = _median_ms(lambda: dst.copy_(src))
    print(f"hbm_tbs: {2 * src.numel() / (ms * 1e-3) / 1e12:.3f}  # {torch.cuda.get_device_name()}: 4 GiB copy")
    src = dst = None  # freed before the matrices
    for name, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        a = torch.randn(8192, 8192, device="cuda", dtype=dt)
        b = torch.randn(8192, 8192, device="cuda", dtype=dt)
        ms = _median_ms(lambda: torch.mm(a, b))  # noqa: B023 - timed before the next dtype
        print(f"{name}: {2 * 8192**3 / (ms * 1e-3) / 1e12:.1f}  # 8192^3 torch.mm, random data")


if __name__ == "__main__":
    main()
