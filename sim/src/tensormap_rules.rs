//! The rules of tensor maps built on the device, shared by the tile machine
//! (`machine::tensormaps`, Triton's `tma.make_desc`/`tma.desc_acquire`) and the PTX front end
//! (`tensormap.replace`, `tensormap.cp_fenceproxy`, `fence.proxy.tensormap::generic`): the
//! field values `tensormap.replace` accepts (PTX ISA, "tensormap.replace"), and the
//! `stale-tensormap` finding of a copy through a map its CTA wrote without acquiring it in the
//! tensormap proxy (docs/semantics.md#tensor-maps-built-on-the-device).

use bwsim_isa::{Code, Diagnostic, Span};

/// Why a map's global address, `offset_bits` past a 256-byte aligned tensor start, is not
/// one `.global_address` takes (16-byte aligned).
pub fn base_error(offset_bits: i64) -> Option<String> {
    (offset_bits < 0 || offset_bits.rem_euclid(128) != 0).then(|| {
        format!(
            "base offset of {} bytes is not 16-byte aligned",
            offset_bits as f64 / 8.0
        )
    })
}

/// Why dimension `k` of `d` elements is not one `.global_dim` takes (1 to 2^32 elements,
/// cuTensorMapEncodeTiled's globalDim).
pub fn dim_error(k: usize, d: i64) -> Option<String> {
    (!(1..=1 << 32).contains(&d)).then(|| format!("dimension {k} is {d}, outside 1..=2^32"))
}

/// Why a byte stride `b` of dimension `k` (over elements of `elem_bits` bits) is not one
/// `.global_stride` takes (a positive multiple of 16 bytes below 2^40, whole elements).
pub fn stride_error(k: usize, b: i64, elem_bits: i64) -> Option<String> {
    (b <= 0 || b % 16 != 0 || b >= 1 << 40 || (b * 8) % elem_bits != 0)
        .then(|| format!("byte stride {b} of dimension {k} is not a positive multiple of 16 below 2^40"))
}

/// The `stale-tensormap` finding of a TMA copy at `span` through the map `name`, written at
/// `written` through the generic proxy and not acquired since by the copying CTA; `help`
/// says what acquires it in the kernel's language.
pub fn stale(name: &str, span: Span, written: Span, help: String) -> Diagnostic {
    Diagnostic::new(
        Code::StaleTensormap,
        format!(
            "TMA copy through `{name}`, whose tensor map this CTA wrote without acquiring it in the tensormap proxy"
        ),
        span,
        "may read the old tensor map",
    )
    .with_label(written, "the map is written here (generic proxy, released at GPU scope)")
    .with_note("the TMA unit reads a tensor map through the tensormap proxy: a map written through the generic proxy is seen only after `fence.proxy.tensormap::generic.acquire` on it in the CTA that copies (docs/semantics.md#tensor-maps-built-on-the-device)")
    .with_help(help)
}
