# The hazard zeros_cuda's own stream avoids, shown with CUDA alone (ctypes over libcudart 13):
# a zeroing queued on the legacy default stream (cudaMemset, or cudaMemsetAsync on stream 0) and
# not waited for, then a 1 KiB copy into the block's last row on a non-blocking stream. Counts
# the rounds in which the late zeroing wiped the copied row. Run by `tools/gpu/run.sh devices`.
import ctypes as c
import time

rt = c.CDLL("libcudart.so.13")


def ok(code, what):
    if code != 0:
        raise SystemExit(f"{what}: CUDA error {code}")


host = c.c_void_p()
back = c.c_void_p()
ok(rt.cudaMallocHost(c.byref(host), c.c_size_t(1024)), "cudaMallocHost")
ok(rt.cudaMallocHost(c.byref(back), c.c_size_t(1024)), "cudaMallocHost")
c.memset(host, 0x3F, 1024)
stream = c.c_void_p()
ok(rt.cudaStreamCreateWithFlags(c.byref(stream), 1), "cudaStreamCreateWithFlags(NonBlocking)")
for gib in (1, 8):
    n = gib << 30
    for how, host_work_us in (("cudaMemset", 0), ("cudaMemsetAsync(stream 0)", 0), ("cudaMemset", 300)):
        wiped = 0
        for _ in range(20):
            dev = c.c_void_p()
            ok(rt.cudaMalloc(c.byref(dev), c.c_size_t(n)), "cudaMalloc")
            if how == "cudaMemset":
                ok(rt.cudaMemset(dev, 0, c.c_size_t(n)), how)
            else:
                ok(rt.cudaMemsetAsync(dev, 0, c.c_size_t(n), None), how)
            until = time.perf_counter() + host_work_us * 1e-6
            while time.perf_counter() < until:
                pass
            last = c.c_void_p(dev.value + n - 1024)
            ok(rt.cudaMemcpyAsync(last, host, c.c_size_t(1024), 4, stream), "cudaMemcpyAsync")
            ok(rt.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
            ok(rt.cudaDeviceSynchronize(), "cudaDeviceSynchronize")
            ok(rt.cudaMemcpy(back, last, c.c_size_t(1024), 2), "cudaMemcpy")
            wiped += c.string_at(back, 1024) != b"\x3f" * 1024
            ok(rt.cudaFree(dev), "cudaFree")
        print(f"{gib} GiB, {how}, {host_work_us} us of host work between: copied row wiped in {wiped} of 20 rounds")
