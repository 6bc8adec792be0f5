# experiments: lanes per GPU, host register cost, device bench, cpu scaling, stream bench
set -u
export PSFSIM_LIBRARY=/tmp/b/libpsfsim.so.0 PYTHONPATH=python
for L in 1 2 3; do echo "== PSFSIM_GPU_LANES=$L"; PSFSIM_GPU_LANES=$L python3 - <<'PY'
import sys, time, numpy as np
sys.path.insert(0, "bench")
import device_bench as db, psfsim, torch
s = psfsim.Set(db.config(10000), backend="gpu")
t = torch.empty((10000, 256, 256), device="cuda")
p = torch.empty((10000, 256, 256), pin_memory=True)
for what, fn in [("out_torch", lambda: s.compute(out=t)), ("numpy_out", lambda o=np.empty((10000,256,256),np.float32): s.compute(out=o)), ("pinned", lambda: s.compute(out=p.numpy())), ("u16", lambda o=np.empty((10000,256,256),np.uint16): s.compute(out=o, dtype=np.uint16))]:
    fn(); best = 9
    for _ in range(3):
        t0 = time.perf_counter(); fn(); best = min(best, time.perf_counter() - t0)
    print(what, "%.0f/s" % (10000 / best), flush=True)
PY
done
python3 - <<'PY'
import time, numpy as np, torch
cr = torch.cuda.cudart()
for fresh in (True, False):
    a = np.empty((10000, 256, 256), np.float32)
    if not fresh: a.fill(1)
    t0 = time.perf_counter(); r = cr.cudaHostRegister(a.ctypes.data, a.nbytes, 0); t1 = time.perf_counter()
    cr.cudaHostUnregister(a.ctypes.data); t2 = time.perf_counter()
    print("cudaHostRegister 2.6 GB fresh=%s: %.1f ms (rc %s), unregister %.1f ms" % (fresh, 1e3*(t1-t0), r, 1e3*(t2-t1)))
PY
nproc; lscpu | grep -E "Model name|Socket|NUMA node\(s\)"
