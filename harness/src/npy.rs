//! `.npy` files in and out of a launch: `--input NAME=FILE.npy` replaces a launch tensor's drawn
//! contents with an array, `--save-outputs DIR` writes a run's tensors as `DIR/NAME.npy`.
//!
//! Element types numpy has map to their numpy type (`f32` to `<f4`, `f16` to `<f2`, `i1` to
//! `|b1`, the integers to theirs); those it lacks travel as raw bits in the unsigned integer of
//! their width (`bf16` as `<u2`, the fp8 and scale types as `|u1`, `f4e2m1` one element per
//! `|u1`, its low four bits). This module owns that mapping and nothing else: which tensor a
//! name means is the launch plan's business.

use bwsim_isa::launch::HostTensor;
use bwsim_isa::types::DType;
use npyz::half::f16;
use npyz::WriterBuilder;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One `--input NAME=FILE.npy`.
#[derive(Clone, Debug)]
pub struct InputArg {
    pub name: String,
    pub path: PathBuf,
}

/// Parse `NAME=FILE.npy`.
pub fn parse_input(s: &str) -> Result<InputArg, String> {
    match s.split_once('=') {
        Some((n, p)) if !n.trim().is_empty() && !p.trim().is_empty() => Ok(InputArg {
            name: n.trim().to_string(),
            path: PathBuf::from(p.trim()),
        }),
        _ => Err(format!("`{s}` is not NAME=FILE.npy")),
    }
}

/// The numpy element type `--save-outputs` writes for `dtype` (and `--input` reads).
pub fn numpy_dtype(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 | DType::TF32 => "float32",
        DType::F16 => "float16",
        DType::BF16 | DType::U16 => "uint16",
        DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1 | DType::UE8M0 | DType::UE4M3 | DType::U8 => "uint8",
        DType::I1 => "bool",
        DType::I8 => "int8",
        DType::I16 => "int16",
        DType::I32 => "int32",
        DType::I64 => "int64",
        DType::U32 => "uint32",
        DType::U64 => "uint64",
    }
}

/// Replace the tensors of `inputs` named by `args` with the arrays of their files. Each array
/// must have the tensor's shape and the numpy type [`numpy_dtype`] gives for its element type.
pub fn apply_inputs(inputs: &mut [HostTensor], args: &[InputArg]) -> Result<(), String> {
    for a in args {
        let Some(k) = inputs.iter().position(|t| t.name == a.name) else {
            let names: Vec<&str> = inputs.iter().map(|t| t.name.as_str()).collect();
            return Err(format!(
                "--input {}: the launch has no tensor `{}` (its tensors: {})",
                a.name,
                a.name,
                names.join(", ")
            ));
        };
        let spec = &inputs[k];
        let t = read(&a.path, &spec.name, spec.dtype, &spec.shape)
            .map_err(|e| format!("--input {}={}: {e}", a.name, a.path.display()))?;
        inputs[k] = t;
    }
    Ok(())
}

fn read_vec<T: npyz::Deserialize>(
    f: npyz::NpyFile<std::io::BufReader<std::fs::File>>,
) -> Result<Vec<T>, String> {
    let ty = f.dtype().descr();
    f.into_vec::<T>()
        .map_err(|e| format!("cannot read its {ty} data: {e}"))
}

/// The elements of `f`, read as `T`, as element bits (`to_bits`).
fn read_bits<T: npyz::Deserialize>(
    f: npyz::NpyFile<std::io::BufReader<std::fs::File>>,
    to_bits: impl Fn(T) -> u64,
) -> Result<Vec<u64>, String> {
    Ok(read_vec::<T>(f)?.into_iter().map(to_bits).collect())
}

/// Read `path` as a tensor `name` of `dtype` and `shape`.
pub fn read(path: &Path, name: &str, dtype: DType, shape: &[u64]) -> Result<HostTensor, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let f = npyz::NpyFile::new(std::io::BufReader::new(file)).map_err(|e| format!("not a .npy file: {e}"))?;
    if f.shape() != shape {
        return Err(format!(
            "the array has shape {:?}, the tensor {shape:?}",
            f.shape()
        ));
    }
    if f.order() == npyz::Order::Fortran && shape.len() > 1 {
        return Err("the array is in Fortran order; save np.ascontiguousarray(x)".into());
    }
    let want = numpy_dtype(dtype);
    let mismatch = |e: String| format!("{e} (a {dtype} tensor is read from a {want} array)");
    let bits = match dtype {
        DType::F32 | DType::TF32 => read_bits(f, |v: f32| v.to_bits() as u64),
        DType::F16 => read_bits(f, |v: f16| v.to_bits() as u64),
        DType::BF16 | DType::U16 => read_bits::<u16>(f, u64::from),
        DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1 | DType::UE8M0 | DType::UE4M3 | DType::U8 => {
            read_bits::<u8>(f, u64::from)
        }
        DType::I1 => read_bits::<bool>(f, u64::from),
        DType::I8 => read_bits(f, |v: i8| v as u8 as u64),
        DType::I16 => read_bits(f, |v: i16| v as u16 as u64),
        DType::I32 => read_bits(f, |v: i32| v as u32 as u64),
        DType::I64 => read_bits(f, |v: i64| v as u64),
        DType::U32 => read_bits::<u32>(f, u64::from),
        DType::U64 => read_vec::<u64>(f),
    }
    .map_err(mismatch)?;
    if dtype == DType::F4E2M1 {
        if let Some(i) = bits.iter().position(|&b| b > 0xf) {
            return Err(format!(
                "element {i} is {}, not an fp4 bit pattern (0..=15)",
                bits[i]
            ));
        }
    }
    let mut t = HostTensor::zeros(name, dtype, shape.to_vec());
    for (i, b) in bits.into_iter().enumerate() {
        t.set_bits(i as u64, b);
    }
    Ok(t)
}

fn write_vec<T: npyz::Serialize + npyz::AutoSerialize>(
    w: &mut impl Write,
    shape: &[u64],
    data: impl Iterator<Item = T>,
) -> std::io::Result<()> {
    let mut out = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(w)
        .begin_nd()?;
    out.extend(data)?;
    out.finish()
}

/// Write `t` as `dir/NAME.npy` (through a temporary file and a rename, so that a reader never
/// sees half a file); returns the path.
pub fn write(dir: &Path, t: &HostTensor) -> Result<PathBuf, String> {
    let path = dir.join(format!("{}.npy", t.name));
    let tmp = dir.join(format!(".{}.npy.tmp", t.name));
    let n = t.numel();
    let bits = (0..n).map(|i| t.get_bits(i));
    let mut w = std::io::BufWriter::new(
        std::fs::File::create(&tmp).map_err(|e| format!("cannot create `{}`: {e}", tmp.display()))?,
    );
    let s = &t.shape;
    let r = match t.dtype {
        DType::F32 | DType::TF32 => write_vec(&mut w, s, bits.map(|b| f32::from_bits(b as u32))),
        DType::F16 => write_vec(&mut w, s, bits.map(|b| f16::from_bits(b as u16))),
        DType::BF16 | DType::U16 => write_vec(&mut w, s, bits.map(|b| b as u16)),
        DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1 | DType::UE8M0 | DType::UE4M3 | DType::U8 => {
            write_vec(&mut w, s, bits.map(|b| b as u8))
        }
        DType::I1 => write_vec(&mut w, s, bits.map(|b| b != 0)),
        DType::I8 => write_vec(&mut w, s, bits.map(|b| b as u8 as i8)),
        DType::I16 => write_vec(&mut w, s, bits.map(|b| b as u16 as i16)),
        DType::I32 => write_vec(&mut w, s, bits.map(|b| b as u32 as i32)),
        DType::I64 => write_vec(&mut w, s, bits.map(|b| b as i64)),
        DType::U32 => write_vec(&mut w, s, bits.map(|b| b as u32)),
        DType::U64 => write_vec(&mut w, s, bits),
    }
    .and_then(|_| w.flush());
    drop(w);
    r.and_then(|_| std::fs::rename(&tmp, &path)).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write `{}`: {e}", path.display())
    })?;
    Ok(path)
}

/// Write every tensor of a run into `dir` (created if missing).
pub fn save_all(dir: &Path, tensors: &[HostTensor]) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
    tensors.iter().map(|t| write(dir, t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element type survives a write and a read bit for bit.
    #[test]
    fn round_trip_every_dtype() {
        let dir = std::env::temp_dir().join(format!("bwsim-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for dt in DType::ALL {
            let mut t = HostTensor::zeros("t", dt, vec![3, 5]);
            // An i1 element is a byte holding 0 or 1 (numpy's bool).
            let mask = match dt {
                DType::I1 => 1,
                _ if dt.bits() == 64 => u64::MAX,
                _ => (1u64 << dt.bits()) - 1,
            };
            for i in 0..t.numel() {
                t.set_bits(
                    i,
                    i.wrapping_mul(0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i + 1)) & mask,
                );
            }
            let p = write(&dir, &t).unwrap();
            let back = read(&p, "t", dt, &[3, 5]).unwrap();
            assert_eq!(back, t, "{dt}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rejects_wrong_shape_and_dtype() {
        let dir = std::env::temp_dir().join(format!("bwsim-npy-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = HostTensor::zeros("t", DType::F32, vec![4, 2]);
        let p = write(&dir, &t).unwrap();
        let e = read(&p, "t", DType::F32, &[2, 4]).unwrap_err();
        assert!(e.contains("shape [4, 2]"), "{e}");
        let e = read(&p, "t", DType::F16, &[4, 2]).unwrap_err();
        assert!(e.contains("float16"), "{e}");
        std::fs::write(dir.join("junk.npy"), b"not numpy").unwrap();
        let e = read(&dir.join("junk.npy"), "t", DType::F32, &[4, 2]).unwrap_err();
        assert!(e.contains("not a .npy file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
