//! The GPU runner: launch PTX on the local NVIDIA GPU through the CUDA driver API (cudarc,
//! loaded dynamically, so bwsim builds and runs with no CUDA installed).
//!
//! Each launch runs in a child process ([`run_isolated`]): an illegal instruction poisons the
//! CUDA context and a deadlocked kernel never returns, so the parent keeps a watchdog, reports
//! `trap: <CUDA error>` or `hang: no completion after T s`, and carries on. The child is the
//! `bwsim` binary itself, re-invoked with a hidden subcommand that calls [`child_main`]; the job
//! and the tensors travel through files in a temporary directory.
//!
//! This module owns the only `unsafe` code of bwsim (tensor-map encoding and kernel launch).

mod device;

use bwsim_isa::launch::HostTensor;
use bwsim_isa::types::{OobFill, Swizzle};
use bwsim_isa::DType;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub use device::child_main;

/// One kernel argument, in parameter order.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum JobArg {
    /// Device pointer to tensor `index`.
    Ptr {
        tensor: usize,
    },
    /// A `CUtensorMap` over tensor `tensor`, passed by value (`.param .align 64 .b8 [128]`).
    /// `box_dims` and `elem_strides` are outermost first, as the IR writes block shapes; an
    /// empty `elem_strides` means 1 in every dimension.
    TensorMap {
        tensor: usize,
        box_dims: Vec<u32>,
        swizzle: SwizzleArg,
        nan_fill: bool,
        #[serde(default)]
        elem_strides: Vec<u32>,
    },
    U32(u32),
    I32(i32),
    I64(i64),
    U64(u64),
    F32(f32),
}

/// Swizzle of a tensor map (serialisable mirror of [`Swizzle`]).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum SwizzleArg {
    None,
    B32,
    B64,
    B128,
}

impl From<Swizzle> for SwizzleArg {
    fn from(s: Swizzle) -> SwizzleArg {
        match s {
            Swizzle::None => SwizzleArg::None,
            Swizzle::B32 => SwizzleArg::B32,
            Swizzle::B64 => SwizzleArg::B64,
            Swizzle::B128 => SwizzleArg::B128,
        }
    }
}

impl JobArg {
    /// A tensor-map argument from the IR's descriptor facts.
    pub fn tensor_map(tensor: usize, box_dims: Vec<u32>, swizzle: Swizzle, oob: OobFill) -> JobArg {
        JobArg::TensorMap {
            tensor,
            box_dims,
            swizzle: swizzle.into(),
            nan_fill: oob == OobFill::Nan,
            elem_strides: Vec::new(),
        }
    }

    /// The same argument with traversal strides per dimension (IR order, outermost first;
    /// `cuTensorMapEncodeTiled`'s `elementStrides`, docs/semantics.md#tma).
    pub fn with_elem_strides(mut self, strides: Vec<u32>) -> JobArg {
        if let JobArg::TensorMap { elem_strides, .. } = &mut self {
            *elem_strides = strides;
        }
        self
    }
}

/// Shape and type of a tensor of the job (its bytes travel in a side file).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TensorMeta {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
}

/// Everything a child needs to run one launch.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GpuJob {
    /// PTX text, JIT-compiled by the driver when `cubin` is empty.
    pub ptx: String,
    /// A cubin assembled by ptxas for the GPU's architecture; loaded instead of the PTX when
    /// present (it travels in a side file, not in the JSON).
    #[serde(skip)]
    pub cubin: Option<Vec<u8>>,
    pub entry: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// CTAs per cluster: launched through `cuLaunchKernelEx` with
    /// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` when present (an `.explicitcluster` entry, or a
    /// launch section with a cluster); a plain `cuLaunchKernel` when `None`.
    #[serde(default)]
    pub cluster: Option<[u32; 3]>,
    pub dynamic_smem: u32,
    pub args: Vec<JobArg>,
    pub tensors: Vec<TensorMeta>,
    /// Timed repetitions after the checked launch (0: correctness only). Each repetition
    /// re-uploads the inputs so every launch sees the same data.
    pub timing_reps: u32,
    /// Timing without transfers (`bwsim gpu --no-check`, full-size problems): input `i`'s
    /// file holds a pattern of whole elements that the child repeats over the tensor's full
    /// size on the device; repetitions do not re-upload, and nothing is read back
    /// ([`Outcome::Finished`] then has no tensors).
    #[serde(default)]
    pub pattern_inputs: bool,
}

/// How a launch ended.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum Status {
    Ok,
    /// The kernel faulted; `error` is the CUDA error as the user would see it
    /// (`an illegal instruction was encountered`, ...), `code` the CUresult name.
    Trap {
        error: String,
        code: String,
    },
    /// Setup failed before the launch (module load, tensor map encoding, ...).
    Setup {
        stage: Stage,
        error: String,
    },
}

/// The step of a launch at which a CUDA call failed (every driver call is checked).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Stage {
    /// No CUDA driver library (`libcuda`) could be loaded.
    Driver,
    /// Context creation on device 0.
    Context,
    /// Reading the job files.
    Job,
    /// Module load (PTX JIT or cubin).
    Module,
    /// Looking up the entry.
    Function,
    /// Raising the dynamic shared-memory limit.
    Attribute,
    /// Device allocation or host-to-device copy.
    Upload,
    /// `cuTensorMapEncodeTiled`.
    TensorMap,
    /// CUDA events for timing.
    Event,
    /// Writing the results.
    Output,
    /// The probe job (not a failure: it carries the device description).
    Probe,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stage::Driver => "driver",
            Stage::Context => "context",
            Stage::Job => "job",
            Stage::Module => "module load",
            Stage::Function => "entry lookup",
            Stage::Attribute => "function attribute",
            Stage::Upload => "upload",
            Stage::TensorMap => "tensor map",
            Stage::Event => "event",
            Stage::Output => "output",
            Stage::Probe => "probe",
        })
    }
}

/// What the child reports.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChildReport {
    pub status: Status,
    pub device: String,
    /// Milliseconds of each timed repetition (CUDA events).
    pub times_ms: Vec<f32>,
}

/// The outcome of an isolated launch.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Finished: the final contents of every tensor, and timings.
    Finished {
        tensors: Vec<HostTensor>,
        times_ms: Vec<f32>,
        device: String,
    },
    Trap {
        error: String,
        code: String,
        device: String,
    },
    Hang {
        after: Duration,
    },
    Setup {
        stage: Stage,
        error: String,
    },
    /// The child died without a report (no driver, a crash): its stderr.
    Crashed {
        stderr: String,
    },
}

/// Errors of the runner itself (not of the kernel).
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("cannot prepare the job directory: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot serialise the job: {0}")]
    Json(#[from] serde_json::Error),
}

fn job_dir() -> std::io::Result<PathBuf> {
    let base = std::env::temp_dir();
    for k in 0..1000u32 {
        let p = base.join(format!("bwsim-gpu-{}-{k}", std::process::id()));
        if std::fs::create_dir(&p).is_ok() {
            return Ok(p);
        }
    }
    Err(std::io::Error::other("no free temporary directory name"))
}

/// Run `job` in a child process (`exe child_arg DIR`) with a watchdog of `timeout`.
pub fn run_isolated(
    exe: &Path,
    child_arg: &str,
    job: &GpuJob,
    inputs: &[HostTensor],
    timeout: Duration,
) -> Result<Outcome, RunnerError> {
    let dir = job_dir()?;
    std::fs::write(dir.join("job.json"), serde_json::to_vec(job)?)?;
    if let Some(c) = &job.cubin {
        std::fs::write(dir.join("module.cubin"), c)?;
    }
    for (i, t) in inputs.iter().enumerate() {
        std::fs::write(dir.join(format!("in{i}.bin")), &t.data)?;
    }
    let mut child = Command::new(exe)
        .arg(child_arg)
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let start = Instant::now();
    let outcome = loop {
        if let Some(status) = child.try_wait()? {
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut stderr);
            }
            let report: Option<ChildReport> = std::fs::read(dir.join("report.json"))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            break match report {
                None => Outcome::Crashed {
                    stderr: format!("exit status {status}; {}", stderr.trim()),
                },
                Some(r) => match r.status {
                    Status::Ok => {
                        let mut tensors = Vec::new();
                        for (i, m) in job.tensors.iter().enumerate().filter(|_| !job.pattern_inputs) {
                            let data = std::fs::read(dir.join(format!("out{i}.bin")))?;
                            tensors.push(HostTensor {
                                name: m.name.clone(),
                                dtype: m.dtype,
                                shape: m.shape.clone(),
                                data,
                            });
                        }
                        Outcome::Finished {
                            tensors,
                            times_ms: r.times_ms,
                            device: r.device,
                        }
                    }
                    Status::Trap { error, code } => Outcome::Trap {
                        error,
                        code,
                        device: r.device,
                    },
                    Status::Setup { stage, error } => Outcome::Setup { stage, error },
                },
            };
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break Outcome::Hang { after: timeout };
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = std::fs::remove_dir_all(&dir);
    Ok(outcome)
}

/// The local GPU as the probe describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuInfo {
    /// The device name (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Compute capability as `major * 10 + minor` (90 for Hopper, 100 for B200).
    pub sm: u32,
}

impl GpuInfo {
    /// Parse the probe's description, `NAME (sm_XY)`.
    pub fn parse(desc: &str) -> Option<GpuInfo> {
        let open = desc.rfind("(sm_")?;
        let sm: u32 = desc[open + 4..].trim_end_matches(')').parse().ok()?;
        Some(GpuInfo {
            name: desc[..open].trim().to_string(),
            sm,
        })
    }

    /// The arch-specific target this GPU runs (`sm_90a` on sm_90, `sm_100a` on sm_100).
    pub fn target(&self) -> Option<bwsim_isa::Target> {
        match self.sm {
            90 => Some(bwsim_isa::Target::Sm90a),
            100 => Some(bwsim_isa::Target::Sm100a),
            _ => None,
        }
    }
}

/// Why [`probe`] found no usable GPU.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The child stopped at a setup stage other than the probe (the driver's error).
    #[error("{stage}: {error}")]
    Setup { stage: String, error: String },
    /// The child crashed: no usable driver (the first line of its stderr).
    #[error("no usable CUDA driver ({0})")]
    NoDriver(String),
    #[error("unexpected probe outcome {0}")]
    Unexpected(String),
    #[error(transparent)]
    Runner(#[from] RunnerError),
}

/// Ask a child process for the GPU's name (`Err` with the reason when there is none).
pub fn probe(exe: &Path, child_arg: &str) -> Result<String, ProbeError> {
    let job = GpuJob {
        ptx: String::new(),
        cubin: None,
        entry: String::new(),
        grid: [0; 3],
        block: [0; 3],
        cluster: None,
        dynamic_smem: 0,
        args: vec![],
        tensors: vec![],
        timing_reps: 0,
        pattern_inputs: false,
    };
    match run_isolated(exe, child_arg, &job, &[], Duration::from_secs(60)) {
        Ok(Outcome::Setup {
            stage: Stage::Probe,
            error,
        }) => Ok(error),
        Ok(Outcome::Setup { stage, error }) => Err(ProbeError::Setup {
            stage: stage.to_string(),
            error,
        }),
        Ok(Outcome::Crashed { stderr }) => Err(ProbeError::NoDriver(first_line(&stderr))),
        Ok(other) => Err(ProbeError::Unexpected(format!("{other:?}"))),
        Err(e) => Err(e.into()),
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

/// The CUDA error message for a CUresult name, as the CUDA runtime prints it.
pub fn cuda_error_message(code: &str) -> &'static str {
    match code {
        "CUDA_ERROR_ILLEGAL_INSTRUCTION" => "an illegal instruction was encountered",
        "CUDA_ERROR_MISALIGNED_ADDRESS" => "misaligned address",
        "CUDA_ERROR_ILLEGAL_ADDRESS" => "an illegal memory access was encountered",
        "CUDA_ERROR_LAUNCH_FAILED" => "unspecified launch failure",
        "CUDA_ERROR_LAUNCH_TIMEOUT" => "the launch timed out and was terminated",
        "CUDA_ERROR_HARDWARE_STACK_ERROR" => "hardware stack error",
        "CUDA_ERROR_INVALID_PC" => "invalid program counter",
        _ => "CUDA error",
    }
}
