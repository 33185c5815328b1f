//! The child side of the runner: everything that touches the CUDA driver.

use super::{ChildReport, GpuJob, JobArg, Stage, Status, SwizzleArg};
use bwsim_isa::DType;
use cudarc::driver::{sys, CudaContext, CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use std::path::Path;

/// A `CUtensorMap` passed by value: 64-byte aligned, 128 bytes (docs/semantics.md#execution-model).
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct TensorMap(sys::CUtensorMap);
// SAFETY: CUtensorMap is plain old data (an opaque 128-byte array); passing it by value as a
// kernel parameter is how the driver API expects tensor maps (cuTensorMapEncodeTiled docs).
unsafe impl DeviceRepr for TensorMap {}

fn code_name(e: &cudarc::driver::DriverError) -> String {
    format!("{:?}", e.0)
}

fn write_report(dir: &Path, r: &ChildReport) {
    if let Ok(b) = serde_json::to_vec(r) {
        let _ = std::fs::write(dir.join("report.json"), b);
    }
}

fn dtype_code(d: DType) -> sys::CUtensorMapDataType {
    use sys::CUtensorMapDataType as T;
    match d {
        DType::F32 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        DType::TF32 => T::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
        DType::F16 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        DType::BF16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::I32 => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
        DType::U32 => T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        DType::I64 => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
        DType::U64 => T::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        DType::I16 | DType::U16 => T::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        _ => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
    }
}

/// Entry point of the hidden child subcommand: run the job in `dir`, write `report.json` and
/// `outN.bin`. Returns the process exit code.
pub fn child_main(dir: &Path) -> i32 {
    let report = |status: Status, device: String| {
        write_report(
            dir,
            &ChildReport {
                status,
                device,
                times_ms: vec![],
            },
        );
    };
    let job: GpuJob = match std::fs::read(dir.join("job.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
    {
        Some(j) => j,
        None => {
            report(
                setup(format!("unreadable job in {}", dir.display()), Stage::Job),
                String::new(),
            );
            return 2;
        }
    };
    // SAFETY: only asks the dynamic loader whether libcuda can be opened.
    if !unsafe { sys::is_culib_present() } {
        report(
            setup("no CUDA driver library (libcuda) could be loaded", Stage::Driver),
            String::new(),
        );
        return 1;
    }
    let ctx = match CudaContext::new(0) {
        Ok(c) => c,
        Err(e) => {
            report(
                setup(format!("no CUDA device: {e}"), Stage::Context),
                String::new(),
            );
            return 1;
        }
    };
    let device = ctx.name().unwrap_or_else(|_| "unknown GPU".into());
    if job.entry.is_empty() {
        let (maj, min) = (
            ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
                .unwrap_or(0),
            ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
                .unwrap_or(0),
        );
        report(
            Status::Setup {
                stage: Stage::Probe,
                error: format!("{device} (sm_{maj}{min})"),
            },
            device,
        );
        return 0;
    }
    let mut job = job;
    if let Ok(c) = std::fs::read(dir.join("module.cubin")) {
        job.cubin = Some(c);
    }
    let report = match run_job(&ctx, &job, dir) {
        Ok(times_ms) => ChildReport {
            status: Status::Ok,
            device: device.clone(),
            times_ms,
        },
        Err(status) => ChildReport {
            status,
            device: device.clone(),
            times_ms: vec![],
        },
    };
    write_report(dir, &report);
    0
}

fn setup(e: impl std::fmt::Display, stage: Stage) -> Status {
    Status::Setup {
        stage,
        error: e.to_string(),
    }
}

fn trap(e: &cudarc::driver::DriverError) -> Status {
    let code = code_name(e);
    Status::Trap {
        error: super::cuda_error_message(&code).to_string(),
        code,
    }
}

fn run_job(ctx: &std::sync::Arc<CudaContext>, job: &GpuJob, dir: &Path) -> Result<Vec<f32>, Status> {
    let stream = ctx.default_stream();
    // The cubin ptxas built for this architecture; if the driver refuses it (a toolkit newer
    // than the driver), the PTX through the driver's JIT.
    let module = match &job.cubin {
        Some(c) => match ctx.load_module(Ptx::from_binary(c.clone())) {
            Ok(m) => m,
            Err(cubin_err) => ctx.load_module(Ptx::from_src(job.ptx.clone())).map_err(|e| {
                setup(
                    format!("cubin rejected ({cubin_err}); PTX JIT failed too: {e}"),
                    Stage::Module,
                )
            })?,
        },
        None => ctx
            .load_module(Ptx::from_src(job.ptx.clone()))
            .map_err(|e| setup(e, Stage::Module))?,
    };
    let f = module
        .load_function(&job.entry)
        .map_err(|e| setup(e, Stage::Function))?;
    if job.dynamic_smem > 48 * 1024 {
        f.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            job.dynamic_smem as i32,
        )
        .map_err(|e| setup(e, Stage::Attribute))?;
    }
    let inputs: Vec<Vec<u8>> = (0..job.tensors.len())
        .map(|i| std::fs::read(dir.join(format!("in{i}.bin"))))
        .collect::<Result<_, _>>()
        .map_err(|e| setup(e, Stage::Job))?;
    let mut bufs: Vec<CudaSlice<u8>> = Vec::new();
    if job.pattern_inputs {
        for (meta, pattern) in job.tensors.iter().zip(&inputs) {
            bufs.push(fill_with_pattern(&stream, meta, pattern)?);
        }
    } else {
        for data in &inputs {
            // Never allocate zero bytes: the driver rejects it.
            let mut v = data.clone();
            if v.is_empty() {
                v.push(0);
            }
            bufs.push(stream.clone_htod(&v).map_err(|e| setup(e, Stage::Upload))?);
        }
    }
    let mut maps: Vec<TensorMap> = Vec::new();
    for a in &job.args {
        if let JobArg::TensorMap {
            tensor,
            box_dims,
            swizzle,
            nan_fill,
            elem_strides,
        } = a
        {
            let meta = job
                .tensors
                .get(*tensor)
                .ok_or_else(|| setup("bad tensor index", Stage::TensorMap))?;
            let (ptr, _g) = bufs[*tensor].device_ptr(&stream);
            let rank = meta.shape.len();
            let esize = (meta.dtype.bits() as u64).div_ceil(8);
            let dims: Vec<u64> = meta.shape.iter().rev().copied().collect();
            let mut strides = Vec::new();
            let mut acc = esize;
            for d in dims.iter().take(rank.saturating_sub(1)) {
                acc *= d;
                strides.push(acc);
            }
            let boxd: Vec<u32> = box_dims.iter().rev().copied().collect();
            // Traversal strides, innermost first like every other array here
            // (docs/semantics.md#tma: the box then moves ceil(box / stride) elements per
            // dimension >= 1).
            let mut es: Vec<u32> = elem_strides.iter().rev().copied().collect();
            es.resize(rank, 1);
            let sw = match swizzle {
                SwizzleArg::None => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
                SwizzleArg::B32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
                SwizzleArg::B64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
                SwizzleArg::B128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            };
            let fill = if *nan_fill {
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
            } else {
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
            };
            // SAFETY: zeroed CUtensorMap is a valid output buffer for the encoder.
            let mut tm = TensorMap(unsafe { std::mem::zeroed() });
            // SAFETY: all pointers point at live local arrays of `rank` (strides: rank-1)
            // elements; `ptr` is a live device allocation of the tensor.
            let r = unsafe {
                sys::cuTensorMapEncodeTiled(
                    &mut tm.0,
                    dtype_code(meta.dtype),
                    rank as u32,
                    ptr as *mut std::ffi::c_void,
                    dims.as_ptr(),
                    strides.as_ptr(),
                    boxd.as_ptr(),
                    es.as_ptr(),
                    sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                    sw,
                    sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
                    fill,
                )
            };
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(setup(
                    format!(
                        "cuTensorMapEncodeTiled returned {r:?} for tensor `{}` box {box_dims:?}",
                        meta.name
                    ),
                    Stage::TensorMap,
                ));
            }
            maps.push(tm);
        }
    }
    let cfg = LaunchConfig {
        grid_dim: (job.grid[0], job.grid[1], job.grid[2]),
        block_dim: (job.block[0], job.block[1], job.block[2]),
        shared_mem_bytes: job.dynamic_smem,
    };
    let mut times = Vec::new();
    for rep in 0..=job.timing_reps {
        if rep > 0 && !job.pattern_inputs {
            for (b, data) in bufs.iter_mut().zip(&inputs) {
                if !data.is_empty() {
                    stream.memcpy_htod(data, b).map_err(|e| setup(e, Stage::Upload))?;
                }
            }
        }
        let start = stream
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| setup(e, Stage::Event))?;
        let scalars: Vec<Scalar> = job.args.iter().filter_map(Scalar::of).collect();
        if let Some(cluster) = job.cluster {
            launch_cluster(&f, &stream, &cfg, cluster, job, &bufs, &maps, &scalars).map_err(|e| trap(&e))?;
        } else {
            let mut b = stream.launch_builder(&f);
            let mut map_i = 0;
            let mut sc_i = 0;
            for a in &job.args {
                match a {
                    JobArg::Ptr { tensor } => {
                        b.arg(&bufs[*tensor]);
                    }
                    JobArg::TensorMap { .. } => {
                        b.arg(&maps[map_i]);
                        map_i += 1;
                    }
                    _ => {
                        scalars[sc_i].push(&mut b);
                        sc_i += 1;
                    }
                }
            }
            // SAFETY: the arguments match the entry's parameter list as the backend's ABI
            // describes it (the job was built from the same lowering).
            unsafe { b.launch(cfg) }.map_err(|e| trap(&e))?;
        }
        let end = stream
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| setup(e, Stage::Event))?;
        stream.synchronize().map_err(|e| trap(&e))?;
        if rep > 0 {
            times.push(start.elapsed_ms(&end).map_err(|e| setup(e, Stage::Event))?);
        } else if !job.pattern_inputs {
            for (i, b) in bufs.iter().enumerate() {
                let host: Vec<u8> = stream.clone_dtoh(b).map_err(|e| trap(&e))?;
                let n = inputs[i].len();
                std::fs::write(dir.join(format!("out{i}.bin")), &host[..n.min(host.len())])
                    .map_err(|e| setup(e, Stage::Output))?;
            }
        }
    }
    Ok(times)
}

/// A device buffer of the tensor's full size holding `pattern` (whole elements) repeated, for
/// timing runs that do not transfer their inputs ([`GpuJob::pattern_inputs`]): uploaded in
/// chunks of at most 16 MiB of repeated pattern.
fn fill_with_pattern(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    meta: &super::TensorMeta,
    pattern: &[u8],
) -> Result<CudaSlice<u8>, Status> {
    let numel = meta.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d));
    let bytes = numel.saturating_mul(meta.dtype.bits() as u64).div_ceil(8).max(1);
    let n = usize::try_from(bytes)
        .map_err(|_| setup(format!("`{}`: {bytes} bytes", meta.name), Stage::Upload))?;
    let mut buf = stream
        .alloc_zeros::<u8>(n)
        .map_err(|e| setup(format!("`{}` ({n} bytes): {e}", meta.name), Stage::Upload))?;
    if pattern.is_empty() {
        return Ok(buf);
    }
    let reps = ((16usize << 20) / pattern.len()).max(1);
    let chunk: Vec<u8> = pattern.repeat(reps);
    let mut off = 0;
    while off < n {
        let len = chunk.len().min(n - off);
        let mut dst = buf.slice_mut(off..off + len);
        stream
            .memcpy_htod(&chunk[..len], &mut dst)
            .map_err(|e| setup(e, Stage::Upload))?;
        off += len;
    }
    Ok(buf)
}

/// Scalar arguments, kept alive for the launch builder.
enum Scalar {
    U32(u32),
    I32(i32),
    I64(i64),
    U64(u64),
    F32(f32),
}

impl Scalar {
    fn of(a: &JobArg) -> Option<Scalar> {
        Some(match a {
            JobArg::U32(v) => Scalar::U32(*v),
            JobArg::I32(v) => Scalar::I32(*v),
            JobArg::I64(v) => Scalar::I64(*v),
            JobArg::U64(v) => Scalar::U64(*v),
            JobArg::F32(v) => Scalar::F32(*v),
            _ => return None,
        })
    }
    /// The address of the value, as `cuLaunchKernelEx` takes kernel parameters.
    fn as_param(&self) -> *mut std::ffi::c_void {
        match self {
            Scalar::U32(v) => v as *const u32 as *mut std::ffi::c_void,
            Scalar::I32(v) => v as *const i32 as *mut std::ffi::c_void,
            Scalar::I64(v) => v as *const i64 as *mut std::ffi::c_void,
            Scalar::U64(v) => v as *const u64 as *mut std::ffi::c_void,
            Scalar::F32(v) => v as *const f32 as *mut std::ffi::c_void,
        }
    }
    fn push<'a>(&'a self, b: &mut cudarc::driver::LaunchArgs<'a>) {
        match self {
            Scalar::U32(v) => b.arg(v),
            Scalar::I32(v) => b.arg(v),
            Scalar::I64(v) => b.arg(v),
            Scalar::U64(v) => b.arg(v),
            Scalar::F32(v) => b.arg(v),
        };
    }
}

/// Launch with a cluster shape: `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`
/// (cudarc's launch builder has no cluster form). Parameters in the job's order, each passed
/// as the address of its value, as `cuLaunchKernel` takes them.
#[allow(clippy::too_many_arguments)]
fn launch_cluster(
    f: &cudarc::driver::CudaFunction,
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    cfg: &LaunchConfig,
    cluster: [u32; 3],
    job: &GpuJob,
    bufs: &[CudaSlice<u8>],
    maps: &[TensorMap],
    scalars: &[Scalar],
) -> Result<(), cudarc::driver::DriverError> {
    // Device addresses first (the parameter array points into this vector: no reallocation
    // after the addresses are taken); the guards keep cudarc's event bookkeeping.
    let mut ptrs: Vec<sys::CUdeviceptr> = Vec::with_capacity(job.args.len());
    let mut guards = Vec::new();
    for a in &job.args {
        if let JobArg::Ptr { tensor } = a {
            let (p, g) = bufs[*tensor].device_ptr(stream);
            ptrs.push(p);
            guards.push(g);
        }
    }
    let mut params: Vec<*mut std::ffi::c_void> = Vec::with_capacity(job.args.len());
    let (mut pi, mut mi, mut si) = (0, 0, 0);
    for a in &job.args {
        match a {
            JobArg::Ptr { .. } => {
                params.push(&ptrs[pi] as *const sys::CUdeviceptr as *mut std::ffi::c_void);
                pi += 1;
            }
            JobArg::TensorMap { .. } => {
                params.push(&maps[mi] as *const TensorMap as *mut std::ffi::c_void);
                mi += 1;
            }
            _ => {
                params.push(scalars[si].as_param());
                si += 1;
            }
        }
    }
    // SAFETY: an all-zero launch attribute is a valid value of the C struct; its id and
    // cluster dimension are set before use.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = cluster[0];
    attr.value.clusterDim.y = cluster[1];
    attr.value.clusterDim.z = cluster[2];
    let config = sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: &mut attr,
        numAttrs: 1,
    };
    // SAFETY: `params` holds one pointer per entry parameter, in the entry's order (the job
    // was built from the backend's ABI), each to a live value of the parameter's size: the
    // device addresses in `ptrs`, the 64-byte aligned tensor maps, the scalars; `config` and
    // `attr` outlive the call, and the function belongs to the stream's context.
    let r = unsafe {
        sys::cuLaunchKernelEx(
            &config,
            f.cu_function(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    drop(guards);
    r.result()
}
