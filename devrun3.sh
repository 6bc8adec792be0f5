#!/usr/bin/env bash
# lead's device call 3 (not committed)
source .gpu/on-device.sh
O=${OUT:-/tmp/out}; mkdir -p $O
t0=$(date +%s)
cmake -S . -B /tmp/b -G Ninja -DPSFSIM_WERROR=ON -DCMAKE_BUILD_TYPE=Release >$O/cmake.txt 2>&1 || { tail -30 $O/cmake.txt; exit 1; }
cmake --build /tmp/b -j16 >$O/build.txt 2>&1 || { grep -B3 -A10 -m5 error $O/build.txt; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
timeout 150 ctest --test-dir /tmp/b -j8 --timeout 120 --output-on-failure -R "gpu|cpu_count|test_lib|test_python|segment|detector|mft" >$O/ctest3.txt 2>&1
grep -E "tests passed|FAILED|\(Failed\)" $O/ctest3.txt | head -20
echo "tests $(( $(date +%s) - t0 )) s"
timeout 90 /tmp/b/bench/psfsim_gpu_micro detector 2>&1 | tee $O/gpu_micro_detector.txt | tail -8
echo "micro $(( $(date +%s) - t0 )) s"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >$O/pip.txt 2>&1 || for w in .whl/*.whl; do python3 -m zipfile -e "$w" /tmp/site; done
PYTHONPATH=/tmp/site PSFSIM_LIBRARY=/tmp/b/libpsfsim.so.0 OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 timeout 240 taskset -c 0,1 python3 -W ignore bench/python_bench.py --backend cpu --count 1000 --bin /tmp/b/psfsim --repeat 3 --ref-count 20 --peer-backend numpy --peers prysm,hcipy >$O/python_cpu2.txt 2>&1; grep -v "^#" $O/python_cpu2.txt | tail -14; grep "^#" $O/python_cpu2.txt | tail -8
echo "python $(( $(date +%s) - t0 )) s"
BACKEND=cpu PYTHON=python3 COUNTS="10000 100000" PEER_ARGS=--numpy timeout $(( 560 - ( $(date +%s) - t0 ) )) taskset -c 0,1 bash bench/datasets_bench.sh /tmp/b /dev/shm/dsc "100000:32" >$O/ds_cpu2.csv 2>$O/ds_cpu2.err; cat $O/ds_cpu2.csv; tail -2 $O/ds_cpu2.err
echo "end $(( $(date +%s) - t0 )) s"
