for L in 1 2 3; do echo "== PSFSIM_GPU_LANES=$L"; PSFSIM_GPU_LANES=$L PSFSIM_LIBRARY=/tmp/b/libpsfsim.so.0 python3 - <<'PY'
import sys, time, numpy as np
sys.path.insert(0, "bench"); sys.path.insert(0, "python")
import device_bench as db, psfsim, torch
s = psfsim.Set(db.config(10000), backend="gpu")
t = torch.empty((10000, 256, 256), device="cuda")
s.compute(out=t)
for what, fn in [("out_torch", lambda: s.compute(out=t)), ("numpy_out", lambda o=np.empty((10000,256,256),np.float32): s.compute(out=o)), ("u16", lambda o=np.empty((10000,256,256),np.uint16): s.compute(out=o, dtype=np.uint16))]:
    fn(); best = 9
    for _ in range(3):
        t0 = time.perf_counter(); fn(); best = min(best, time.perf_counter() - t0)
    print(what, "%.0f/s" % (10000 / best))
PY
done
PSFSIM_LIBRARY=/tmp/b/libpsfsim.so.0 python3 - <<'PY'
import time, numpy as np, torch, ctypes
cr = torch.cuda.cudart()
for fresh in (True, False):
    a = np.empty((10000, 256, 256), np.float32)
    if not fresh: a.fill(1)
    t0 = time.perf_counter(); r = cr.cudaHostRegister(a.ctypes.data, a.nbytes, 0); t1 = time.perf_counter()
    cr.cudaHostUnregister(a.ctypes.data); t2 = time.perf_counter()
    print("cudaHostRegister 2.6 GB fresh=%s: %.1f ms (rc %s), unregister %.1f ms" % (fresh, 1e3*(t1-t0), r, 1e3*(t2-t1)))
b = np.empty((10000,256,256), np.float32); c = np.ones_like(b)
for n in (1,):
    t0=time.perf_counter(); np.copyto(b, c); print("numpy copyto 2.6GB one thread: %.1f ms" % (1e3*(time.perf_counter()-t0)))
PY
nproc; lscpu | grep -E "Model name|Socket|NUMA node\(s\)|L3"
