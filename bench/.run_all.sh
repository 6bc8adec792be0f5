set -u
source .gpu/on-device.sh >/dev/null
cmake -S . -B /tmp/b -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DPSFSIM_WERROR=ON > /tmp/cfg.log 2>&1 && cmake --build /tmp/b -j16 > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
export PSFSIM_LIBRARY=/tmp/b/libpsfsim.so.0 PYTHONPATH=python
echo "== pytest device/stream/repro"; python3 -m pytest -q -p no:cacheprovider python/tests/test_device.py python/tests/test_stream.py python/tests/test_repro.py 2>&1 | tail -12
echo "== ctest"; ctest --test-dir /tmp/b -j8 2>&1 | grep -E "tests passed|\(Failed\)|Timeout" 
echo "== lanes"; bash bench/.exp2.sh 2>&1 | tail -24
echo "== device_bench"; python3 bench/device_bench.py --count 10000 --repeat 3 2>&1 | tee $OUT/device_bench.txt | grep -v "^psfsim\|^torch\|^cupy" 
echo "== stream_bench"; timeout 150 python3 bench/stream_bench.py 2>&1 | tee $OUT/stream_bench.txt | tail -14
echo "== cpu_scaling"; timeout 150 python3 bench/cpu_scaling.py 2>&1 | tee $OUT/cpu_scaling.txt | tail -24
