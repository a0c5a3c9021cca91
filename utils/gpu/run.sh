#!/usr/bin/env bash
# Runs on the GPU machine, in a copy of the repository that carries
# dist-gpu/ (tc's wheel for CPython 3.12, made here by utils/gpu/build.sh):
#
#   bash utils/gpu/run.sh [tests|bench|resnet|overhead|dynamic|breakdown|compile|variants|autotune|cliffs|models|distributed|zoo|decode|all]
#
# installs the wheel into /tmp/tc-gpu, reports what `python -m tc` finds,
# runs the GPU tests (and the CPU suites under that torch) with pytest and
# then benchmarks/bench_gpu.py and benchmarks/bench_resnet.py (`resnet`: the
# ResNet-18 training step alone; `breakdown`: benchmarks/compile_breakdown.py
# --cuda with the driver's PTX cache off: where tc's cold compile goes;
# `compile`: benchmarks/bench_compile.py --device cuda, cold and warm first
# calls, with $TC_COMPILE_ARGS such as "--workloads mlp,resnet";
# `autotune`: benchmarks/bench_gpu.py --autotune, tc's max-autotune against
# its default mode on each row; `dynamic`: benchmarks/bench_dynamic.py,
# dynamic=True across sequence lengths (real models; `--models all`: small
# ones across batch sizes), with $TC_DYNAMIC_ARGS; `models`:
# benchmarks/bench_models.py, BERT, ViT, GPT-2, a Llama-style decoder and
# ResNet-50 at real sizes in bf16, with $TC_MODELS_ARGS; `distributed`:
# benchmarks/bench_distributed.py, DDP and FSDP2 on 1 and 2 GPUs, with
# $TC_DISTRIBUTED_ARGS; `cliffs`: benchmarks/bench_cliffs.py --device cuda,
# with $TC_CLIFFS_ARGS; `zoo`: benchmarks/bench_zoo.py, PyTorch's TIMM and
# HuggingFace dashboard models, with $TC_ZOO_ARGS such as "--shard 1/8";
# `decode`: benchmarks/bench_decode.py, token-by-token LLM decode, with
# $TC_DECODE_ARGS such as "--sizes 1b,8b --batches 1,8,32").
# Results go to $OUT when set (the device tool's output folder), else
# benchmarks/results. `variants` times tc under
# each schedule variant of $TC_VARIANTS (';'-separated TC_CUDA_OPTIONS
# values; the default list below), the driver's PTX cache off.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
what="${1:-all}"
out="${OUT:-$root/benchmarks/results}"
mkdir -p "$out"

# The wheel, installed with pip into a folder of its own (the machine's
# torch stays as it is).
rm -rf /tmp/tc-gpu && mkdir -p /tmp/tc-gpu
wheel="$(ls dist-gpu/tc-*-cp312-*.whl)" || exit 1
python3 -m pip install -q --no-deps --no-index --target /tmp/tc-gpu/site \
  "$wheel" || exit 1
export PYTHONPATH="/tmp/tc-gpu/site${PYTHONPATH:+:$PYTHONPATH}"
export PATH="/tmp/tc-gpu/site/bin:$PATH"
export PYTHONUNBUFFERED=1
# What tc found here: its build, the torch, the GPU and CUDA's toolchain.
python3 -m tc || exit 1

status=0
if [[ "$what" == tests || "$what" == all ]]; then
  python3 -m pytest -q -p no:cacheprovider test/python/targets/test_cuda.py \
    test/python/test_seeds.py test/python/backend/test_backend.py \
    test/python/test_importer.py test/python/test_export.py \
    test/python/backend/test_training.py test/python/compiler/test_autodiff.py \
    test/python/test_random.py test/python/test_semantics.py \
    test/python/compiler/test_cache.py test/python/targets/test_cuda_sizes.py \
    test/python/test_compat.py test/python/test_package.py \
    test/python/test_direct.py test/python/test_rows.py \
    test/python/compiler/test_autotune.py test/python/debug/test_debug.py \
    test/python/targets/test_cuda_decode.py \
    test/python/backend/test_skinny_products.py \
    test/python/backend/test_written_inputs.py \
    --junitxml="$out/gpu-tests.xml" 2>&1 | tee "$out/gpu-tests.log"
  status=${PIPESTATUS[0]}
fi
if [[ "$what" == variants ]]; then
  variants="${TC_VARIANTS:-;replicate-trig=false;vector-width=2;max-block-size=512;max-block-size=1024;format=isa}"
  CUDA_CACHE_DISABLE=1 python3 benchmarks/bench_gpu.py --variants "$variants" \
    2>&1 | tee "$out/variants.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ "$what" == autotune ]]; then
  python3 benchmarks/bench_gpu.py --autotune --out "$out" 2>&1 \
    | tee "$out/autotune.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ "$what" == bench || "$what" == all ]]; then
  python3 benchmarks/bench_gpu.py --out "$out" 2>&1 | tee "$out/bench.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ "$what" == zoo ]]; then
  python3 benchmarks/bench_zoo.py --out "$out" ${TC_ZOO_ARGS:-} 2>&1 \
    | tee "$out/zoo.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ "$what" == decode ]]; then
  python3 benchmarks/bench_decode.py --out "$out" ${TC_DECODE_ARGS:-} 2>&1 \
    | tee "$out/decode.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ "$what" == resnet || "$what" == all ]]; then
  # Seed 002's ResNet-18 training step; $TC_RESNET_ARGS adds options
  # (--autocast bf16, --profile tc, ...).
  python3 benchmarks/bench_resnet.py --out "$out" ${TC_RESNET_ARGS:-} 2>&1 \
    | tee "$out/resnet.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ "$what" == dynamic || "$what" == all ]]; then
  # dynamic=True over sequence lengths: compiles, first and steady calls.
  python3 benchmarks/bench_dynamic.py --out "$out" ${TC_DYNAMIC_ARGS:-} \
    2>&1 | tee "$out/dynamic.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ "$what" == cliffs || "$what" == all ]]; then
  # Sorts, scans, scatters, gathers, FFTs, histograms against eager.
  python3 benchmarks/bench_cliffs.py --device cuda --out "$out" \
    ${TC_CLIFFS_ARGS:-} 2>&1 | tee "$out/cliffs.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ "$what" == models || "$what" == all ]]; then
  # Real models at real sizes (one process per model), eager / Inductor / tc.
  python3 benchmarks/bench_models.py --out "$out" ${TC_MODELS_ARGS:-} \
    2>&1 | tee "$out/models.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ "$what" == distributed ]]; then
  # DDP (GPT-2) and FSDP2 (Llama-style) on 1 and 2 GPUs, eager / Inductor /
  # tc, with $TC_DISTRIBUTED_ARGS (it fails on a loss off eager's); then
  # the distributed tests (gloo and NCCL; not the real-model one, which
  # reruns that benchmark).
  python3 benchmarks/bench_distributed.py --out "$out" \
    ${TC_DISTRIBUTED_ARGS:-} 2>&1 | tee "$out/distributed.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
  python3 -m pytest -q -p no:cacheprovider test/python/test_distributed.py \
    -k "not real_models" 2>&1 | tee "$out/distributed-tests.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ "$what" == overhead || "$what" == all ]]; then
  # Seed 004's MLP at batch 128: per-call time, reduce-overhead modes.
  python3 benchmarks/bench_overhead.py --out "$out" 2>&1 \
    | tee "$out/overhead.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ "$what" == breakdown || "$what" == all ]]; then
  CUDA_CACHE_DISABLE=1 python3 benchmarks/compile_breakdown.py --cuda 2>&1 \
    | tee "$out/gpu-compile-breakdown.md"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ "$what" == compile ]]; then
  python3 benchmarks/bench_compile.py --device cuda --out "$out" \
    ${TC_COMPILE_ARGS:-} 2>&1 | tee "$out/compile.log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
exit $status
