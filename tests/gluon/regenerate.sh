#!/usr/bin/env bash
# Regenerate the TTGIR fixtures of tests/gluon with one Triton release, into that release's folder:
#
#   bash tests/gluon/regenerate.sh 3.9.0             # tests/gluon/3.9/*.ttgir
#   bash tests/gluon/regenerate.sh 3.6.0 OUT_DIR     # the 3.6.0 files written to OUT_DIR instead
#   bash tests/gluon/regenerate.sh all [OUT_DIR]     # 3.6.0, 3.7.1, 3.8.0 and 3.9.0 (OUT_DIR/3.6, ...)
#
# VERSION is one of 3.6.0 3.7.1 3.8.0 3.9.0. Triton is taken from BWSIM_TRITON_PYTHON (a python that
# has that Triton installed; for one VERSION, not `all`), else from the virtual environment
# .tools/triton-VERSION, created on demand (`python3 -m venv`, `pip install triton==VERSION numpy`).
# No GPU and no torch are needed. The output does not depend on the machine: regenerating into
# OUT_DIR and comparing with the checked-in folder finds any difference byte for byte.
#
# Every release compiles the shared kernels of tests/gluon (written once, in Triton 3.9's Gluon API;
# triton_compat.py gives older Tritons the names they spell differently), and the new-feature
# kernels of its own folder and of every older release's folder (tests/gluon/3.7/*.py, ...) that
# its API still accepts. Source locations in the TTGIR are relative to the release's folder
# (`../elementwise_add.py`); the launch sidecars stay in tests/gluon/ (`../NAME.launch`).
#
# Each kernel that fails to compile is reported and the others go on; the exit status is 1 if any
# failed. BWSIM_REGEN_ONLY=REGEX compiles only the fixtures whose names match (`^attention`), the
# others left as they are. BWSIM_REGEN_PTX=1 writes Triton's PTX of the same compiles instead
# (`NAME.TARGET.ptx`, ptxfront/tests/fixtures/gluon_to_ptx.py; give an OUT_DIR).
set -euo pipefail
cd "$(dirname "$0")/../.."
src=tests/gluon
all_versions=(3.6.0 3.7.1 3.8.0 3.9.0)

usage() {
    echo "usage: bash tests/gluon/regenerate.sh VERSION [OUT_DIR]   (VERSION: ${all_versions[*]} or all)" >&2
    exit 2
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
version=$1
if [ "$version" = all ]; then
    status=0
    for v in "${all_versions[@]}"; do
        if [ $# -eq 2 ]; then
            bash "$0" "$v" "$2/${v%.*}" || status=1
        else
            bash "$0" "$v" || status=1
        fi
    done
    exit $status
fi
case " ${all_versions[*]} " in
*" $version "*) ;;
*) echo "regenerate.sh: Triton $version is not one of: ${all_versions[*]}" >&2; usage ;;
esac
minor=${version%.*}
dest=$src/$minor
out=${2:-$dest}
mkdir -p "$out"

# The Python with this Triton.
if [ -n "${BWSIM_TRITON_PYTHON:-}" ]; then
    python=$BWSIM_TRITON_PYTHON
else
    venv=.tools/triton-$version
    if [ ! -x "$venv/bin/python" ]; then
        echo "regenerate.sh: creating $venv (triton==$version numpy)" >&2
        python3 -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet "triton==$version" numpy
    fi
    python=$venv/bin/python
fi
found=$("$python" -c 'import triton; print(triton.__version__)' 2>/dev/null || echo none)
if [ "$found" != "$version" ]; then
    echo "regenerate.sh: $python has Triton $found, not $version" >&2
    exit 2
fi

# A private Triton cache: a cached kernel compiled from a copy of these sources elsewhere carries
# that copy's file locations.
TRITON_CACHE_DIR=$(mktemp -d)
export TRITON_CACHE_DIR
trap 'rm -rf "$TRITON_CACHE_DIR"' EXIT

failed=()
count=0
ptx_batch=$TRITON_CACHE_DIR/ptx-batch
only=${BWSIM_REGEN_ONLY:-}
# gen NAME.TARGET SOURCE KERNEL ARGS...: compiles KERNEL of SOURCE for TARGET into NAME.TARGET.ttgir.
gen() {
    local name=$1 source=$2 kernel=$3
    shift 3
    if [ -n "$only" ] && ! [[ $name =~ $only ]]; then
        return 0
    fi
    count=$((count + 1))
    if [ -n "${BWSIM_REGEN_PTX:-}" ]; then
        # One line of the batch compiled at the end, Triton imported once.
        printf '%q ' "$source" "$kernel" --target "${name##*.}" "$@" -o "$out/$name.ptx" >> "$ptx_batch"
        echo >> "$ptx_batch"
        return 0
    fi
    if ! "$python" tools/gluon_to_ttgir.py "$source" "$kernel" --target "${name##*.}" "$@" \
        --locations-relative-to "$dest" -o "$out/$name.ttgir"; then
        failed+=("$name")
        rm -f "$out/$name.ttgir"
    fi
}
# gen_bugs NAME.TARGET "BUG..." SOURCE KERNEL ARGS...: the correct kernel NAME.TARGET (BUG=''), and
# bug_NAME_BUG.TARGET for each planted BUG (BUG='BUG').
gen_bugs() {
    local name=${1%.*} target=${1##*.} bugs=$2 bug
    shift 2
    gen "$name.$target" "$@" -D "BUG=''"
    for bug in $bugs; do
        gen "bug_${name}_$bug.$target" "$@" -D "BUG='$bug'"
    done
}
# drop_lines NAME.TARGET FROM.TARGET PATTERN: NAME.TARGET.ttgir is FROM.TARGET.ttgir (compiled above)
# without the lines matching PATTERN (grep -E): a bug no Gluon source can plant, because the
# compiler always emits what those lines hold, written as a hand edit of the compiled TTGIR.
drop_lines() {
    local name=$1 from=$2 pattern=$3 file
    if [ -n "$only" ] && ! [[ $name =~ $only ]]; then
        return 0
    fi
    if [ -n "${BWSIM_REGEN_PTX:-}" ]; then
        return 0
    fi
    count=$((count + 1))
    file=$out/$from.ttgir
    [ -f "$file" ] || file=$dest/$from.ttgir
    if [ -f "$file" ] && grep -qE "$pattern" "$file"; then
        grep -vE "$pattern" "$file" > "$out/$name.ttgir"
    else
        failed+=("$name")
        rm -f "$out/$name.ttgir"
    fi
}
# `since 3.8` / `before 3.9`: whether this release is at least / older than MAJOR.MINOR.
since() { [ "$(printf '%s\n%s\n' "$1" "$minor" | sort -V | head -1)" = "$1" ]; }
before() { ! since "$1"; }

# ---- The shared kernels (Triton 3.9's API), compiled by every release ----
add_args=(--num-warps 4 --arg 'a_desc=desc<fp32[32, 64]>' --arg 'b_desc=desc<fp32[32, 64]>'
    --arg 'c_desc=desc<fp32[32, 64]>' --arg xnumel=i32 --arg ynumel=i32 -D XBLOCK=32 -D YBLOCK=64)
mm_args=(--num-warps 8 --arg 'a_desc=desc<fp16[128, 64]>' --arg 'b_desc=desc<fp16[64, 256]>'
    --arg 'c_desc=desc<fp16[128, 256]>' -D num_buffers=3)
for t in sm_100a sm_90a; do
    if [ $t = sm_100a ]; then mma=MMAv5; else mma=WGMMA; fi
    gen elementwise_add_tma.$t $src/elementwise_add.py elementwise_add_tma_kernel "${add_args[@]}" \
        -D NUM_BUFFERS=2
    gen elementwise_add_ws.$t $src/elementwise_add.py elementwise_add_ws_kernel "${add_args[@]}" \
        -D NUM_LOAD_BUFFERS=2 -D NUM_STORE_BUFFERS=2
    gen matmul_pipelined.$t $src/persistence.py matmul_pipelined_kernel "${mm_args[@]}" -D MMAImpl=$mma
    gen persistent_matmul.$t $src/persistence.py persistent_matmul_kernel "${mm_args[@]}" \
        -D MMAImpl=$mma -D SchedulerImpl=PersistentTileScheduler
    gen persistent_matmul_pipelined.$t $src/persistence.py persistent_matmul_pipelined_kernel \
        "${mm_args[@]}" -D MMAImpl=$mma -D SchedulerImpl=PersistentTileScheduler -D STEALB=False
    gen softmax.$t $src/softmax.py softmax_kernel --num-warps 4 --arg 'x_ptr=*fp32' \
        --arg 'out_ptr=*fp32' --arg n_rows=i32 -D ROWS=8 -D COLS=128
    # Scalar loads and stores (tutorial 01-intro's), and gl.map_elementwise.
    gen scalars.$t $src/scalars.py scalars_kernel --num-warps 4 --arg 'x_ptr=*fp32' \
        --arg 'out_ptr=*fp32' --arg n=i32 -D N=128
    gen map_elementwise.$t $src/map_elementwise.py map_elementwise_kernel --num-warps 4 \
        --arg 'x_ptr=*fp32' --arg 'y_ptr=*fp32' --arg 'out_ptr=*fp32' -D N=256
    gen int_ops.$t $src/int_ops.py int_ops_kernel --num-warps 4 --arg 'x_ptr=*i32' \
        --arg 'out_ptr=*i32' -D N=256
    # Pointers as integers (tt.ptr_to_int, tt.int_to_ptr), one passed as an int64 argument.
    gen_bugs int_ptr.$t next_tile $src/int_ptr.py int_ptr_kernel --num-warps 4 --arg 'x_ptr=*fp32' \
        --arg 'out_ptr=*fp32' --arg 'rems_ptr=*i32' --arg y_addr=i64 -D BLOCK=128
    gen atomics.$t $src/atomics.py atomics_kernel --num-warps 4 --arg 'x_ptr=*i32' \
        --arg 'hist_ptr=*i32' --arg 'sums_ptr=*fp32' --arg 'maxes_ptr=*i32' --arg n=i32 -D BINS=16 -D BLOCK=128
    gen scan.$t $src/scan.py scan_kernel --num-warps 4 --arg 'x_ptr=*i32' --arg 'sum_ptr=*i32' \
        --arg 'max_ptr=*i32' -D ROWS=8 -D COLS=128
    gen while_loop.$t $src/while_loop.py while_loop_kernel --num-warps 4 --arg 'x_ptr=*i32' \
        --arg 'out_ptr=*i32' --arg limit=i32 -D N=128
    gen claims.$t $src/claims.py claims_kernel --num-warps 4 --arg 'flags_ptr=*i32' \
        --arg 'counts_ptr=*i32' -D N=128
    gen reductions.$t $src/reductions.py reductions_kernel --num-warps 4 --arg 'x_ptr=*fp32' \
        --arg 'y_ptr=*i32' --arg 'vmax_ptr=*fp32' --arg 'imax_ptr=*i32' --arg 'vmin_ptr=*i32' --arg 'imin_ptr=*i32' \
        --arg 'sums_ptr=*fp32' --arg 'maxes_ptr=*i32' --arg 'tails_ptr=*i32' -D ROWS=8 -D COLS=64
    gen register_gather_histogram.$t $src/register_gather_histogram.py register_gather_histogram_kernel \
        --num-warps 4 --arg 'x_ptr=*i32' --arg 'y_ptr=*fp32' --arg 'rotated_ptr=*fp32' --arg 'hist_ptr=*i32' \
        --arg n=i32 -D BLOCK=256 -D BINS=16 -D ROWS=16 -D COLS=32
    gen fp4_unpack.$t $src/fp4_unpack.py fp4_unpack_kernel --num-warps 4 --arg 'a_ptr=*i8' \
        --arg 'b_ptr=*i8' --arg 'cols_ptr=*fp32' --arg 'rows_ptr=*fp32' -D ROWS=32 -D COLS=64
    gen pair_reductions.$t $src/pair_reductions.py pair_reductions_kernel --num-warps 4 \
        --arg 'x_ptr=*i32' --arg 'y_ptr=*fp32' --arg 'top_ptr=*i32' --arg 'count_ptr=*i32' --arg 'lo_ptr=*i32' \
        --arg 'hi_ptr=*i32' --arg 'm_ptr=*fp32' --arg 'denom_ptr=*fp32' -D ROWS=8 -D COLS=128
    gen per_thread.$t $src/per_thread.py per_thread_kernel --num-warps 4 --arg 'x_ptr=*fp32' \
        --arg 'sums_ptr=*fp32' --arg 'centered_ptr=*fp32' --arg 'deq_ptr=*fp32' --arg xnumel=i32 -D XBLOCK=32 \
        -D YBLOCK=32
    # Calls of noinline helpers (tt.call), and a planted race inside a helper.
    gen_bugs noinline_calls.$t "shared_row" $src/noinline_calls.py noinline_calls_kernel \
        --num-warps 4 --arg 'x_ptr=*fp32' \
        --arg 'out_ptr=*fp32' --arg s=fp32 -D N=128
    # A device-side assertion (tt.assert, compiled with Triton's debug option).
    gen_bugs device_assert.$t "no_mask" $src/device_assert.py device_assert_kernel --num-warps 4 --debug \
        --arg 'x_ptr=*i32' --arg 'out_ptr=*i32' --arg n=i32 -D BLOCK=256
    # Float conversions with an explicit rounding (tt.fp_to_fp).
    gen fp_rounding.$t $src/fp_rounding.py fp_rounding_kernel --num-warps 4 --arg 'x_ptr=*fp32' \
        --arg 'out_ptr=*fp32' -D N=256
    cp_args=(--num-warps 4 --arg 'a_ptr=*fp32' --arg 'b_ptr=*fp32' --arg 'c_ptr=*fp32' --arg 'max_ptr=*fp32'
        --arg n_rows=i32 --arg n_cols=i32 -D XBLOCK=8 -D YBLOCK=64 -D NUM_BUFFERS=3)
    gen cp_async.$t $src/cp_async.py cp_async_kernel "${cp_args[@]}"
    gen bug_cp_async_no_wait.$t $src/cp_async.py cp_async_kernel "${cp_args[@]}" -D "BUG='no_wait'"
    sr_args=(--num-warps 4 --arg 'x_ptr=*fp32' --arg 'h_ptr=*fp16' --arg 'out_ptr=*fp16' --arg 'hout_ptr=*fp16'
        -D ROWS=16 -D COLS=64)
    gen smem_rows.$t $src/smem_rows.py smem_rows_kernel "${sr_args[@]}"
    gen bug_smem_rows_no_wait.$t $src/smem_rows.py smem_rows_kernel "${sr_args[@]}" \
        -D "BUG='no_wait'"
    # Copies with different register layouts (tutorials 01 and 02).
    c1=(--num-warps 4 --arg 'in_ptr=*fp32' --arg 'out_ptr=*fp32' --arg numel=i32 -D XBLOCK=1024)
    gen copy_1d_scalar.$t $src/layouts.py copy_1d_kernel "${c1[@]}" \
        -D 'layout=gl.BlockedLayout([1], [32], [4], [0])'
    gen copy_1d_vector.$t $src/layouts.py copy_1d_kernel "${c1[@]}" \
        -D 'layout=gl.BlockedLayout([4], [32], [4], [0])'
    c2=(--num-warps 4 --arg 'in_ptr=*fp32' --arg 'out_ptr=*fp32' --arg xnumel=i32 --arg ynumel=i32
        -D XBLOCK=32 -D YBLOCK=64)
    gen copy_2d_rows.$t $src/layouts.py copy_2d_kernel "${c2[@]}" \
        -D 'layout=gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])'
    gen copy_2d_cols.$t $src/layouts.py copy_2d_kernel "${c2[@]}" \
        -D 'layout=gl.BlockedLayout([4, 1], [8, 4], [1, 4], [0, 1])'
    # A TMA store's source buffer and a cross-warp layout conversion's scratch at the same shared
    # addresses (docs/gluon.md, "Shared scratch of layout conversions"): written after Triton's
    # shared-memory allocation pass (--allocation), whose offsets show the scratch over the buffer.
    gen_bugs scratch_reuse.$t no_store_wait $src/scratch_reuse.py scratch_reuse_kernel --num-warps 4 \
        --allocation --arg 'in_ptr=*fp32' --arg 'out_desc=desc<fp32[32, 64]>' --arg 'out2_ptr=*fp32' \
        -D XBLOCK=32 -D YBLOCK=64
    # Descriptors built on the device (tma.make_tensor_descriptor): a grouped copy, one group a program.
    gen device_descriptors.$t $src/device_descriptors.py grouped_scale_kernel --num-warps 4 --arg 'x_ptr=*fp32' \
        --arg 'out_ptr=*fp32' --arg 'starts_ptr=*i32' --arg 'scales_ptr=*fp32' --arg N=i32 -D BLOCK_M=32 -D BLOCK_N=64
    # ... and the same TTGIR without its tensormap-proxy acquires (Triton emits one for every
    # descriptor, so only a hand edit can drop them).
    drop_lines bug_device_descriptors_no_acquire.$t device_descriptors.$t 'ttng\.tensormap_fenceproxy_acquire'
done
gen wgmma_matmul.sm_90a $src/wgmma_matmul.py wgmma_matmul_kernel --num-warps 4 \
    --arg 'a_desc=desc<fp16[64, 64]>' --arg 'b_desc=desc<fp16[64, 128]>' --arg 'c_desc=desc<fp16[64, 128]>' --arg K=i32

# Tensor-memory register layouts: one round trip per TMEM message shape and block size.
for cfg in "32x32b 128 64 128 64" "16x64b 128 64 128 64" "16x128b 128 128 128 128" "16x256b 128 256 128 256" \
    "32x32b 128 128 64 64" "32x32b 256 64 128 64"; do
    set -- $cfg
    gen tmem_layout_$1_$2x$3_b$4x$5.sm_100a $src/tmem_layouts.py tmem_roundtrip_kernel --num-warps 4 \
        --arg 'in_ptr=*fp32' --arg 'out_ptr=*fp32' -D M=$2 -D N=$3 -D BM=$4 -D BN=$5 -D "VARIANT='$1'"
done
# wgmma with A in registers (tutorial 05's small MMA, LHS_IN_REG) over the dtype matrix: f16 into f32 and
# f16, bf16 on two warpgroups, A from shared memory into an f16 accumulator, fp8 into f16 and s8 into s32
# with B stored [N, K] (TRANSPOSE_B).
wr() {
    local name=$1 warps=$2 a=$3 b=$4 c=$5
    shift 5
    gen $name.sm_90a $src/wgmma_regs.py wgmma_regs_kernel --num-warps $warps --arg "a_desc=desc<$a>" \
        --arg "b_desc=desc<$b>" --arg "c_desc=desc<$c>" --arg "d_desc=desc<$c>" "$@"
}
wr wgmma_regs 4 'fp16[64, 64]' 'fp16[64, 128]' 'fp32[64, 128]' -D LHS_IN_REG=True -D TRANSPOSE_B=False -D INSTR_N=128
wr wgmma_regs_f16acc 4 'fp16[64, 64]' 'fp16[64, 128]' 'fp16[64, 128]' -D LHS_IN_REG=True -D TRANSPOSE_B=False \
    -D INSTR_N=64
wr wgmma_regs_bf16 8 'bf16[128, 64]' 'bf16[64, 128]' 'fp32[128, 128]' -D LHS_IN_REG=True -D TRANSPOSE_B=False \
    -D INSTR_N=128
wr wgmma_smem_f16acc 4 'fp16[64, 64]' 'fp16[64, 128]' 'fp16[64, 128]' -D LHS_IN_REG=False -D TRANSPOSE_B=False \
    -D INSTR_N=128
wr wgmma_regs_fp8 4 'fp8e4nv[64, 128]' 'fp8e4nv[64, 128]' 'fp16[64, 64]' -D LHS_IN_REG=True -D TRANSPOSE_B=True \
    -D INSTR_N=64
wr wgmma_i8 4 'i8[64, 128]' 'i8[64, 128]' 'i32[64, 64]' -D LHS_IN_REG=False -D TRANSPOSE_B=True -D INSTR_N=64
wr wgmma_regs_i8 4 'i8[64, 128]' 'i8[64, 128]' 'i32[64, 64]' -D LHS_IN_REG=True -D TRANSPOSE_B=True -D INSTR_N=32

gen matmul_warp_specialized.sm_100a $src/warp_specialization.py matmul_warp_specialized_kernel \
    --num-warps 4 --arg 'a_desc=desc<fp16[128, 64]>' --arg 'b_desc=desc<fp16[64, 256]>' \
    --arg 'c_desc=desc<fp16[128, 64]>' -D SchedulerImpl=PersistentTileScheduler -D num_buffers=4 -D SUBTILE_FACTOR=4
gen async_gather.sm_100a $src/gather_scatter.py async_gather_kernel --num-warps 4 \
    --arg 'tensor_desc=desc<bf16[1, 128], [128, 128]>' --arg 'x_offsets_ptr=*i32' --arg y_offset=i32 \
    --arg 'out_ptr=*bf16' -D BLOCK_X=128
gen async_scatter.sm_100a $src/gather_scatter.py async_scatter_kernel --num-warps 4 \
    --arg 'tensor_desc=desc<bf16[1, 128], [128, 128]>' --arg 'x_offsets_ptr=*i32' --arg y_offset=i32 \
    --arg 'src_ptr=*bf16' -D BLOCK_X=128
gen matmul_fused_gather_scatter.sm_100a $src/gather_scatter.py matmul_fused_gather_scatter_kernel \
    --num-warps 4 --arg 'x_desc=desc<bf16[1, 64], [128, 64]>' --arg 'w_desc=desc<bf16[64, 128]>' \
    --arg 'out_desc=desc<bf16[1, 128], [128, 128]>' --arg 'x_gather_indx_ptr=*i32' \
    --arg 'out_scatter_indx_ptr=*i32' -D BLOCK_M=128 -D 'SchedulerImpl=GroupedPersistentTileScheduler(8)' \
    -D num_buffers=3
gen tcgen05_copy.sm_100a $src/tcgen05_copy.py tcgen05_copy_kernel --num-warps 4 \
    --arg 'in_ptr=*fp32' --arg 'out_ptr=*fp32' -D M=128 -D N=64 \
    -D 'smem_layout=gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=32, rank=2)' \
    -D 'tmem_layout=TensorMemoryLayout(block=(128, 64), col_stride=1)'
gen gemm_async.sm_100a $src/gemm_async.py gemm_async_kernel --num-warps 4 \
    --arg 'a_desc=desc<fp16[128, 64]>' --arg 'b_desc=desc<fp16[128, 64]>' --arg 'out_ptr=*fp32'
gen matmul_accumulate.sm_100a $src/tcgen05_copy.py matmul_accumulate_kernel --num-warps 4 \
    --arg 'a_desc=desc<fp16[128, 64]>' --arg 'b_desc=desc<fp16[64, 128]>' --arg 'c_desc=desc<fp32[128, 128]>' \
    --arg 'd_ptr=*fp32' --arg d_stride_m=i32 --arg d_stride_n=i32 \
    -D 'SchedulerImpl=GroupedPersistentTileScheduler(8)' -D num_buffers=3

# Block-scaled mxfp8 matmul (tutorial 11) and its planted bug: the accumulator read before the last MMA
# completes.
sc_args=(--num-warps 4 --arg 'a_desc=desc<fp8e4nv[128, 128]>' --arg 'b_desc=desc<fp8e4nv[128, 128]>'
    --arg 'c_desc=desc<fp16[128, 128]>' --arg 'a_scale_ptr=*u8' --arg 'b_scale_ptr=*u8' --arg scale_stride_m=i32
    --arg scale_stride_k=i32 -D VEC_SIZE=32)
gen_bugs mma_scaled.sm_100a acc_before_wait $src/mma_scaled.py mma_scaled_kernel "${sc_args[@]}"
gen mma_scaled_contig.sm_100a $src/mma_scaled.py mma_scaled_contig_kernel --num-warps 4 \
    --arg 'a_desc=desc<fp8e4nv[128, 128]>' --arg 'b_desc=desc<fp8e4nv[128, 128]>' --arg 'c_desc=desc<fp16[128, 128]>' \
    --arg 'a_scale_ptr=*u8' --arg 'b_scale_ptr=*u8' -D VEC_SIZE=32
# mxfp4 operands (uint8 descriptors, two e2m1 values a byte).
gen mma_scaled_fp4.sm_100a $src/mma_scaled.py mma_scaled_kernel --num-warps 4 \
    --arg 'a_desc=desc<u8[128, 64]>' --arg 'b_desc=desc<u8[128, 64]>' --arg 'c_desc=desc<fp16[128, 128]>' \
    --arg 'a_scale_ptr=*u8' --arg 'b_scale_ptr=*u8' --arg scale_stride_m=i32 --arg scale_stride_k=i32 -D VEC_SIZE=32 \
    -D "BUG=''"
# nvfp4: fp4 operands with ue4m3 factors (float8e4nv) per 16 elements of K.
gen mma_scaled_nvfp4.sm_100a $src/mma_scaled.py mma_scaled_kernel --num-warps 4 \
    --arg 'a_desc=desc<u8[128, 64]>' --arg 'b_desc=desc<u8[128, 64]>' --arg 'c_desc=desc<fp16[128, 128]>' \
    --arg 'a_scale_ptr=*fp8e4nv' --arg 'b_scale_ptr=*fp8e4nv' --arg scale_stride_m=i32 --arg scale_stride_k=i32 \
    -D VEC_SIZE=16 -D "BUG=''"
# Mixed mxfp8 x mxfp4: B's fp4 tile in the fp4_padded layout (8 bytes of padding after every 8).
gen mma_scaled_mixed.sm_100a $src/mma_scaled.py mma_scaled_kernel --num-warps 4 \
    --arg 'a_desc=desc<fp8e4nv[128, 128]>' \
    --arg 'b_desc=tensordesc<u8[128, 64],NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2, fp4_padded=True)>' \
    --arg 'c_desc=desc<fp16[128, 128]>' --arg 'a_scale_ptr=*u8' --arg 'b_scale_ptr=*u8' --arg scale_stride_m=i32 \
    --arg scale_stride_k=i32 -D VEC_SIZE=32 -D "BUG=''"
# The packed-block forms: factors by TMA in the packed-block layout, unswizzled in registers (packed), copied to
# tensor memory by tcgen05_copy from a shared_linear view (copy), and the warp-specialized pipeline (ws).
sf_desc='tensordesc<u8[1, 1, 1, 2, 256],NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=5)>'
packed_args=(--num-warps 4 --arg 'a_desc=desc<fp8e4nv[128, 128]>' --arg 'b_desc=desc<fp8e4nv[128, 128]>'
    --arg 'c_desc=desc<fp16[128, 128]>' --arg "a_scale_desc=$sf_desc" --arg "b_scale_desc=$sf_desc" -D VEC_SIZE=32)
gen_bugs mma_scaled_packed.sm_100a no_fence $src/mma_scaled.py mma_scaled_packed_kernel "${packed_args[@]}"
# Kernels that leave their proxy fences to the compiler, and one whose missing fence it cannot see.
pf_args=(--num-warps 4 --arg 'x_desc=desc<fp32[32, 64]>' --arg 'y_desc=desc<fp32[32, 64]>')
gen proxy_fences.sm_100a $src/proxy_fences.py scale_kernel "${pf_args[@]}" --arg n_blocks=i32
gen proxy_fences_ws.sm_100a $src/proxy_fences.py ws_scale_kernel "${pf_args[@]}" -D "BUG=''"
gen proxy_fences_join.sm_100a $src/proxy_fences.py ws_join_kernel "${pf_args[@]}"
gen bug_proxy_fences_handoff.sm_100a $src/proxy_fences.py ws_scale_kernel "${pf_args[@]}" \
    -D "BUG='handoff'"
# A barrier initialised and invalidated in every iteration of a loop, and the same without the invalidate.
gen_bugs mbarrier_lifecycle.sm_100a no_invalidate $src/mbarrier_lifecycle.py mbarrier_lifecycle_kernel \
    "${pf_args[@]}" --arg n_blocks=i32
gen mma_scaled_copy.sm_100a $src/mma_scaled.py mma_scaled_copy_kernel "${packed_args[@]}"
gen mma_scaled_ws.sm_100a $src/mma_scaled.py mma_scaled_ws_kernel "${packed_args[@]}" \
    -D NUM_BUFFERS=3
gen mma_scaled_pipelined.sm_100a $src/mma_scaled.py mma_scaled_pipelined_kernel \
    "${packed_args[@]}" -D NUM_BUFFERS=3

# Implicit-GEMM convolution (13-conv-im2col's structure; tiled 4-D TMA boxes shifted per filter tap).
conv_args=(--num-warps 4 --arg 'x_desc=desc<fp16[1, 8, 16, 64]>' --arg 'w_desc=desc<fp16[64, 64]>'
    --arg 'y_desc=desc<fp16[1, 8, 16, 64]>' --arg H=i32 --arg W=i32 --arg C=i32 -D R=3 -D S=3 -D PAD=1)
gen conv2d.sm_100a $src/conv.py conv2d_kernel "${conv_args[@]}"
gen conv2d.sm_90a $src/conv.py conv2d_wgmma_kernel "${conv_args[@]}"

# Blackwell attention forward and its planted hand-off bugs (BUG=...).
attn_args=(--num-warps 4 --arg 'q_desc=desc<fp16[128, 64]>' --arg 'k_desc=desc<fp16[64, 64]>'
    --arg 'v_desc=desc<fp16[64, 64]>' --arg 'o_desc=desc<fp16[128, 64]>' --arg qk_scale=fp32 -D N_CTX=256
    -D NUM_BUFFERS=2)
gen_bugs attention.sm_100a "p_before_store correction_race s_ready_phase" $src/attention.py attention_kernel \
    "${attn_args[@]}"
# The same kernel with 64-row query tiles: TMEM blocks of M = 64 (tcgen05.ld/st 16x32bx2).
gen attention_m64.sm_100a $src/attention.py attention_kernel --num-warps 4 \
    --arg 'q_desc=desc<fp16[64, 64]>' --arg 'k_desc=desc<fp16[64, 64]>' --arg 'v_desc=desc<fp16[64, 64]>' \
    --arg 'o_desc=desc<fp16[64, 64]>' --arg qk_scale=fp32 -D N_CTX=256 -D NUM_BUFFERS=2 -D "BUG=''"
# The same kernel with HEAD_D = 128 (a [128, 128] output accumulator in tensor memory).
gen attention_d128.sm_100a $src/attention.py attention_kernel --num-warps 4 \
    --arg 'q_desc=desc<fp16[128, 128]>' --arg 'k_desc=desc<fp16[64, 128]>' --arg 'v_desc=desc<fp16[64, 128]>' \
    --arg 'o_desc=desc<fp16[128, 128]>' --arg qk_scale=fp32 -D N_CTX=256 -D NUM_BUFFERS=2 -D "BUG=''"

# Attention in the structure of tutorial 01-attention-forward (two softmax partitions in
# ping-pong, a correction partition, persistent, causal) and its planted hand-off bugs.
pp_args=(--num-warps 4 --arg sm_scale=fp32 --arg 'm_ptr=*fp32' --arg Z_H=i32 --arg N_CTX=i32
    --arg 'desc_q=desc<fp16[128, 64]>' --arg 'desc_k=desc<fp16[128, 64]>' --arg 'desc_v=desc<fp16[128, 64]>'
    --arg 'desc_o=desc<fp16[128, 64]>' -D NUM_SMS=1 -D CAUSAL=True -D NUM_KV=3)
gen_bugs attention_pingpong.sm_100a "alpha_early no_p_wait" $src/attention_pingpong.py attention_pingpong_kernel \
    "${pp_args[@]}"

# Attention with paired-f32 helpers in 64-bit inline PTX (mov.b64 packs, add/mul/fma.f32x2, a
# reduction whose combiner is inline PTX), and elementwise inline PTX of the integer and
# conversion instructions Gluon helpers use.
gen attention_f32x2.sm_100a $src/attention_f32x2.py attention_f32x2_kernel "${attn_args[@]}"
gen attention_f32x2_causal.sm_100a $src/attention_f32x2.py attention_f32x2_causal_kernel \
    "${attn_args[@]}"
for bug in no_s_wait p_ready_early; do
    gen bug_attention_f32x2_$bug.sm_100a $src/attention_f32x2.py attention_f32x2_kernel \
        "${attn_args[@]}" -D "BUG='$bug'"
done
for t in sm_100a sm_90a; do
    gen bit_tricks.$t $src/bit_tricks.py bit_tricks_kernel --num-warps 4 --arg 'x_ptr=*i32' \
        --arg 'y_ptr=*fp32' --arg 'out_ptr=*i32' --arg 'f_ptr=*fp32' --arg 'h_ptr=*fp16' --arg 'w_ptr=*i64' -D N=256
done

# The checker catalogue's bugs planted in the Gluon source (planted_bugs.py), and the correct kernels.
for bug in "" no_fence wrong_parity short_expect early_release; do
    name=${bug:-fixed}
    for t in sm_100a sm_90a; do
        gen bug_ws_add_$name.$t $src/planted_bugs.py ws_add_kernel "${add_args[@]}" \
            -D NUM_LOAD_BUFFERS=2 -D NUM_STORE_BUFFERS=2 -D "BUG='$bug'"
    done
    gen bug_pipelined_matmul_$name.sm_100a $src/planted_bugs.py pipelined_matmul_kernel \
        "${mm_args[@]}" -D "BUG='$bug'"
done

# cp.async over a cp.async in flight (the concurrency sanitizer's cp.async test shape) and the correct variant.
ov_args=(--num-warps 4 --arg 'a_ptr=*fp32' --arg 'b_ptr=*fp32' --arg 'out_ptr=*fp32' -D XBLOCK=32 -D YBLOCK=64)
for t in sm_100a sm_90a; do
    gen cp_async_overlap.$t $src/cp_async_overlap.py cp_async_overlap_kernel "${ov_args[@]}" -D "BUG=''"
    gen bug_cp_async_overlap.$t $src/cp_async_overlap.py cp_async_overlap_kernel "${ov_args[@]}" \
        -D "BUG='overlap'"
done

if before 3.7; then
    # Triton 3.7's verifier refuses a copy whose buffer is not the descriptor's block in element count or
    # type ("descriptor block and tensor must have the same number of elements", "... element types must
    # match"); 3.6 compiles both, and the hardware runs what it emits (docs/hardware/tma-messages.md).
    for t in sm_100a sm_90a; do
        # A subtiled TMA epilogue in the shape of tutorial 08's: [128, 64] stores through a [128, 256]
        # descriptor.
        gen subtiled_epilogue.$t $src/subtiled_epilogue.py subtiled_epilogue_kernel --num-warps 4 \
            --arg 'x_desc=desc<fp16[128, 256]>' --arg 'y_desc=desc<fp16[128, 256]>' -D SUBTILE_FACTOR=4
        # An f32 buffer stored through an f16 descriptor and overwritten in flight: both bugs in one check.
        gen bug_tma_dtype_race.$t $src/tma_dtype_race.py tma_dtype_race_kernel --num-warps 4 \
            --arg 'out_desc=desc<fp16[64, 64]>' -D XBLOCK=64 -D YBLOCK=64
    done
fi

# ---- The new-feature kernels of each release's folder (tests/gluon/3.7/, ...), compiled by that
# release and every later one whose API still accepts them ----
mc_args=(--num-ctas 2 --arg 'a_desc=desc<fp16[256, 64], cga=[[1, 0]]>' --arg 'b_desc=desc<fp16[64, 64], cga=[[0, 0]]>'
    --arg 'c_desc=desc<fp16[256, 64], cga=[[1, 0]]>' --arg K=i32)
if since 3.7; then
    # Triton 3.7's (tests/gluon/3.7/).
    f=$src/3.7
    if before 3.8; then
        # A two-CTA cluster matmul with TMA multicast, and its planted cluster-synchronisation bugs (3.8
        # changed tcgen05_mma_barrier_count and TensorMemoryLayout's cluster split and dropped
        # get_tmem_reg_layout; 3.8/multicast_matmul.py is the same kernel in 3.8's API).
        gen_bugs multicast_matmul.sm_100a "no_cluster_init expect_cluster" $f/multicast_matmul.py \
            multicast_matmul_kernel "${mc_args[@]}"
    fi
    if before 3.9; then
        # The accumulator's barrier committed once, by a predicated tcgen05_commit (3.9 removed
        # async_copy_global_to_shared).
        gen_bugs commit_pred.sm_100a "commit_first commit_never" $f/commit_pred.py commit_pred_kernel \
            --arg 'a_desc=desc<fp16[128, 64]>' --arg 'b_desc=desc<fp16[64, 128]>' --arg 'c_desc=desc<fp16[128, 128]>' \
            --arg K=i32 -D NUM_BUFFERS=2
    fi
    for t in sm_100a sm_90a; do
        gen smem_gather_scatter.$t $f/smem_gather_scatter.py smem_gather_scatter_kernel \
            --arg 'x_ptr=*fp32' --arg 'perm_ptr=*i32' --arg 'gathered_ptr=*fp32' --arg 'scattered_ptr=*fp32' \
            -D ROWS=16 -D COLS=32
    done
fi
if since 3.8; then
    # Triton 3.8's (tests/gluon/3.8/).
    f=$src/3.8
    gen_bugs multicast_matmul.sm_100a "single_count" $f/multicast_matmul.py multicast_matmul_kernel "${mc_args[@]}"
    # Row softmax with the columns split over clusters of two and four CTAs (cross-CTA reductions).
    for t in sm_100a sm_90a; do
        for c in 2 4; do
            cga='[[0, 1]]'
            [ "$c" = 4 ] && cga='[[0, 1], [0, 2]]'
            gen cluster_softmax_$c.$t $f/cluster_softmax.py cluster_softmax_kernel --num-ctas $c \
                --arg 'x_ptr=*fp32' --arg 'out_ptr=*fp32' -D N=256 -D BLOCK_M=32 -D "CGA=$cga"
        done
    done
    # 1-D layouts split over clusters of 2 and 4 CTAs.
    for t in sm_100a sm_90a; do
        for c in 2 4; do
            cga='[[1]]'
            [ "$c" = 4 ] && cga='[[1], [2]]'
            # One row per program: the row's maximum and sum are reductions across the CTAs to a
            # scalar (the planted bug on Blackwell only).
            bugs=half_stride
            [ $t = sm_90a ] && bugs=
            gen_bugs cluster_row_softmax_$c.$t "$bugs" $f/cluster_softmax.py cluster_row_softmax_kernel \
                --num-ctas $c --arg 'x_ptr=*fp32' --arg 'out_ptr=*fp32' -D N=1024 -D "CGA=$cga"
            # Two producers and two consumers in the partitions of a cluster kernel, one barrier batch
            # (nothing of Blackwell's: Hopper runs it too).
            gen_bugs cluster_ws_pairs_$c.$t no_free_wait $f/cluster_ws_pairs.py cluster_ws_pairs_kernel \
                --num-ctas $c --arg 'x_ptr=*fp32' --arg 'out_ptr=*fp32' -D ROWS=6 -D BLOCK=256 -D "CGA=$cga"
        done
    done
    # A persistent cluster kernel claiming clusters by CLC, storing bools (tensor and scalar).
    for c in 2 4; do
        cga='[[1]]' whole='[[0]]'
        [ "$c" = 4 ] && cga='[[1], [2]]' whole='[[0], [0]]'
        gen_bugs clc_cluster_flags_$c.sm_100a read_early $f/clc_cluster_flags.py clc_cluster_flags_kernel \
            --num-ctas $c --arg 'x_ptr=*fp32' --arg 'pos_ptr=*i1' --arg 'done_ptr=*i1' -D BLOCK=256 -D "CGA=$cga" \
            -D "WHOLE=$whole"
    done
    # Layout conversions between the CTAs: rows split -> columns split (2 and 4 CTAs), rows split ->
    # every CTA the whole tile, and the two rank bits swapped.
    for t in sm_100a sm_90a; do
        for c in rows_cols_2:2:'[[1, 0]]':'[[0, 1]]' rows_cols_4:4:'[[1, 0], [2, 0]]':'[[0, 1], [0, 2]]' \
            rows_whole_2:2:'[[1, 0]]':'[[0, 0]]' swap_4:4:'[[1, 0], [0, 1]]':'[[0, 1], [1, 0]]'; do
            IFS=: read -r cname cn cfrom cto <<< "$c"
            gen cluster_convert_$cname.$t $f/cluster_convert.py cluster_convert_kernel --num-ctas $cn \
                --arg 'x_ptr=*fp32' --arg 'out_ptr=*fp32' -D N=64 -D BLOCK_M=32 -D "FROM=$cfrom" -D "TO=$cto"
        done
    done
    # A 2x2 cluster of four CTAs: A multicast along rank bit 1, B along bit 0.
    gen_bugs cluster_matmul_2x2.sm_100a "partner_count" $f/cluster_matmul_2x2.py cluster_matmul_2x2_kernel \
        --num-ctas 4 \
        --arg 'a_desc=desc<fp16[256, 64], cga=[[1, 0], [0, 0]]>' --arg 'b_desc=desc<fp16[64, 128], cga=[[0, 0], [0, 1]]>' \
        --arg 'c_desc=desc<fp16[256, 128], cga=[[1, 0], [0, 1]]>' --arg K=i32
    gen_bugs two_cta_matmul.sm_100a "per_cta_load_bar" $f/two_cta_matmul.py two_cta_matmul_kernel --num-ctas 2 \
        --arg 'a_desc=desc<fp16[256, 64], cga=[[1, 0]]>' --arg 'b_desc=desc<fp16[64, 128], cga=[[0, 1]]>' \
        --arg 'c_desc=desc<fp16[256, 128], cga=[[1, 0]]>' --arg K=i32
    # Two CTA pairs in a cluster of four: A multicast between the pairs onto the pairs' load
    # barriers, B split four ways, two-CTA MMAs committing to every CTA that shares A.
    gen_bugs pair_multicast_matmul.sm_100a "single_mma_count no_mma_multicast" $f/pair_multicast_matmul.py \
        pair_multicast_matmul_kernel --num-ctas 4 \
        --arg 'a_desc=desc<fp16[256, 64], cga=[[1, 0], [0, 0]]>' --arg 'b_desc=desc<fp16[64, 256], cga=[[0, 1], [0, 2]]>' \
        --arg 'c_desc=desc<fp16[256, 256], cga=[[1, 0], [0, 1]]>' --arg K=i32 -D SEPARATE_COMMIT=False
    gen pair_multicast_matmul_commit.sm_100a $f/pair_multicast_matmul.py \
        pair_multicast_matmul_kernel --num-ctas 4 --arg 'a_desc=desc<fp16[256, 64], cga=[[1, 0], [0, 0]]>' \
        --arg 'b_desc=desc<fp16[64, 256], cga=[[0, 1], [0, 2]]>' --arg 'c_desc=desc<fp16[256, 256], cga=[[1, 0], [0, 1]]>' \
        --arg K=i32 -D "BUG=''" -D SEPARATE_COMMIT=True
    # A two-CTA matmul over a ring of stages (a leading stage dimension, barrier batches, the pair's
    # standalone commits), and a warp-specialized cluster kernel whose barriers stay in their CTA.
    gen_bugs pair_ring_matmul.sm_100a "stage_unwaited" $f/pair_ring_matmul.py pair_ring_matmul_kernel --num-ctas 2 \
        --arg 'a_desc=desc<fp16[256, 64], cga=[[1, 0]]>' --arg 'b_desc=desc<fp16[64, 128], cga=[[0, 1]]>' \
        --arg 'c_desc=desc<fp16[256, 128], cga=[[1, 0]]>' --arg K=i32
    # The warp-specialized cluster kernels use nothing of Blackwell's: Hopper runs them too.
    for t in sm_100a sm_90a; do
        gen_bugs cluster_ws_relay.$t "no_wait" $f/pair_ring_matmul.py cluster_ws_relay_kernel --num-ctas 2 \
            --arg 'x_ptr=*fp32' --arg 'out_ptr=*fp32' -D BLOCK=256
        gen cluster_ws_pair_signal.$t $f/pair_ring_matmul.py cluster_ws_pair_signal_kernel \
            --num-ctas 2 --arg 'out_ptr=*fp32'
    done
    # A persistent two-CTA matmul claiming its tiles with cluster launch control (multicast responses).
    gen_bugs clc_pair_matmul.sm_100a "acc_early relaxed_handoff no_handoff" $f/clc_pair_matmul.py \
        clc_pair_matmul_kernel --num-ctas 2 \
        --arg 'a_desc=desc<fp16[256, 64], cga=[[1, 0]]>' --arg 'b_desc=desc<fp16[64, 128], cga=[[0, 1]]>' \
        --arg 'c_desc=desc<fp16[256, 128], cga=[[1, 0]]>' --arg K=i32
    # A warp-specialized persistent matmul claiming tiles by cluster launch control, the next tile id
    # handed between partitions through an int64 shared buffer.
    gen_bugs clc_ws_matmul.sm_100a "id_unwaited slot_reused" $f/clc_ws_matmul.py clc_ws_matmul_kernel \
        --arg 'a_desc=desc<fp16[128, 64]>' --arg 'b_desc=desc<fp16[64, 128]>' \
        --arg 'c_desc=desc<fp16[128, 128]>'
    # Cluster launch control: a persistent TMA kernel claiming tiles, and its planted hand-off bugs.
    gen_bugs clc_scale.sm_100a "no_expect no_wait" $f/clc_scale.py clc_scale_kernel --arg 'x_desc=desc<fp32[32, 64]>' \
        --arg 'y_desc=desc<fp32[32, 64]>' --arg alpha=fp32
    gen packed_arith.sm_100a $f/packed_arith.py packed_arith_kernel --arg 'x_ptr=*fp32' \
        --arg 'acc_ptr=*fp32' --arg 'out_ptr=*fp32' --arg scale=fp32 --arg alpha=fp32 -D ROWS=8 -D COLS=64
    for t in sm_100a sm_90a; do
        gen_bugs tma_reduce.$t "no_store_wait" $f/tma_reduce.py tma_reduce_kernel --arg 'x_desc=desc<fp32[32, 64]>' \
            --arg 'out_desc=desc<fp32[32, 64]>'
        gen exact_ops.$t $f/exact_ops.py exact_ops_kernel --num-warps 4 --arg 'x_ptr=*i32' \
            --arg 'y_ptr=*fp32' --arg 'u_ptr=*i32' --arg 'f_ptr=*fp32' -D N=256
        gen smem_histogram.$t $f/smem_histogram.py smem_histogram_kernel --arg 'x_ptr=*i32' \
            --arg 'hist_ptr=*i32' --arg 'maxes_ptr=*i32' --arg n=i32 -D BINS=16 -D BLOCK=256
    done
fi
if since 3.9; then
    # Triton 3.9's (tests/gluon/3.9/).
    f=$src/3.9
    gen tmem_row_slice.sm_100a $f/tmem_row_slice.py tmem_row_slice_kernel \
        --arg 'a_desc=desc<fp16[256, 64]>' --arg 'b_desc=desc<fp16[64, 64]>' --arg 'c_desc=desc<fp16[128, 64]>' --arg K=i32
    # Packed half-precision min2/max2 (ttng.packed_arith min|max).
    gen packed_minmax.sm_100a $f/packed_minmax.py packed_minmax_kernel --num-warps 4 \
        --arg 'x_ptr=*fp16' --arg 'a_ptr=*bf16' --arg 'b_ptr=*bf16' --arg 'clamped_ptr=*fp16' --arg 'larger_ptr=*bf16' -D BLOCK=256
    # Four-lane fp8 add2/mul2/fma2 (ttng.packed_arith on fp8; sm_100a only: ptxas refuses the
    # instructions elsewhere, and Triton 3.8's ptxas on sm_100a too).
    gen_bugs fp8_arith.sm_100a overflow $f/fp8_arith.py fp8_arith_kernel --num-warps 4 \
        --arg 'x_ptr=*fp8e4nv' --arg 'y_ptr=*fp8e4nv' --arg 'z_ptr=*fp8e5' --arg 'out_ptr=*fp32' -D BLOCK=512
    gen fp4_fma.sm_100a $f/fp8_arith.py fp4_fma_kernel --num-warps 4 \
        --arg 'w_ptr=*i8' --arg 'y_ptr=*fp8e4nv' --arg 'z_ptr=*fp8e4nv' --arg 'out_ptr=*fp32' -D BLOCK=512
    for t in sm_100a sm_90a; do
        gen_bugs flag_handoff.$t "relaxed_flag" $f/flag_handoff.py flag_handoff_kernel \
            --arg 'x_ptr=*i32' --arg 'data_ptr=*i32' \
            --arg 'out_ptr=*i32' --arg 'flags_ptr=*i32' -D BLOCK=128
        gen_bugs flag_acquire.$t "relaxed_read" $f/flag_acquire.py flag_acquire_kernel \
            --arg 'x_ptr=*i32' --arg 'data_ptr=*i32' \
            --arg 'out_ptr=*i32' --arg 'flags_ptr=*i32' -D BLOCK=128
        gen inline_asm.$t $f/inline_asm.py inline_asm_kernel --arg 'x_ptr=*fp32' --arg 'out_ptr=*fp32' \
            --arg scale=fp32 -D BLOCK=512
        # libdevice's tanh, exp10, log10, log1p, expm1, tan and atan (tt.extern_elementwise).
        gen math_fns.$t $f/math_fns.py math_fns_kernel --num-warps 4 --arg 'x_ptr=*fp32' \
            --arg 'out_ptr=*fp32' -D BLOCK=256
        # Bit casts of 8-bit elements (tt.bitcast between i8 and fp8).
        gen bitcast_fp8.$t $f/bitcast_fp8.py bitcast_fp8_kernel --num-warps 4 --arg 'x_ptr=*i8' \
            --arg 'out_ptr=*fp32' --arg 'back_ptr=*i8' -D BLOCK=512
        # cp.async copies arriving on mbarriers (ttng.async_copy_mbarrier_arrive), both forms.
        cpm_args=(--num-warps 4 --arg 'x_ptr=*fp32' --arg 'y_ptr=*fp32' --arg 'sums_ptr=*fp32' --arg n_rows=i32
            -D N_COLS=256 -D XBLOCK=16 -D YBLOCK=64 -D NUM_STAGES=2)
        gen_bugs cp_async_mbarrier.$t "arrive_early inc_count" $f/cp_async_mbarrier.py cp_async_mbarrier_kernel \
            "${cpm_args[@]}" -D NOINC=True
        gen cp_async_mbarrier_inc.$t $f/cp_async_mbarrier.py cp_async_mbarrier_kernel "${cpm_args[@]}" \
            -D NOINC=False -D "BUG=''"
    done
fi

if [ -n "${BWSIM_REGEN_PTX:-}" ]; then
    "$python" ptxfront/tests/fixtures/gluon_to_ptx.py --batch "$ptx_batch"
    exit
fi
echo "regenerate.sh: Triton $version: $((count - ${#failed[@]})) of $count kernels compiled into $out" >&2
if [ ${#failed[@]} -gt 0 ]; then
    echo "regenerate.sh: Triton $version: failed: ${failed[*]}" >&2
    exit 1
fi
