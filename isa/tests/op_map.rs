//! `OpKind::try_map` converts every operand of an operation, given its name, into another
//! operand type: the way a later stage keeps the IR's operation shape.

use bwsim_isa::ir::{Expr, Ident, OpKind};

fn op(name: &str, pos: &[&str], kw: &[(&str, &str)]) -> OpKind {
    let pos = pos.iter().map(|n| Expr::name(n)).collect();
    let kw = kw.iter().map(|(k, v)| (Ident::new(*k), Expr::name(v))).collect();
    OpKind::from_parts(name, pos, kw).expect("operands fit the signature")
}

/// Each operand becomes `NAME=VALUE`; `drop` names operands with no counterpart.
fn rename(k: &OpKind, drop: &str) -> Option<OpKind<String>> {
    k.try_map(|name, e| -> Result<Option<String>, ()> {
        Ok((name != drop).then(|| format!("{name}={}", e.as_name().unwrap_or("?"))))
    })
    .expect("the closure never fails")
}

#[test]
fn every_operand_is_converted_with_its_name() {
    let k = op("global.load", &["p", "offs"], &[("mask", "m")]);
    let OpKind::GlobalLoad {
        ptr,
        offsets,
        mask,
        other,
    } = rename(&k, "").expect("convertible")
    else {
        panic!("the operation keeps its kind");
    };
    assert_eq!((ptr.as_str(), offsets.as_str()), ("ptr=p", "offsets=offs"));
    assert_eq!(mask.as_deref(), Some("mask=m"));
    assert_eq!(other, None);
}

#[test]
fn a_dropped_keyword_is_left_out_and_a_dropped_positional_makes_it_unconvertible() {
    let k = op("tmem.load", &["buf"], &[("layout", "L")]);
    let Some(OpKind::TmemLoad { src, layout }) = rename(&k, "layout") else {
        panic!("a keyword operand may be dropped");
    };
    assert_eq!((src.as_str(), layout), ("src=buf", None));
    assert_eq!(rename(&k, "src"), None);
    assert_eq!(k.name(), "tmem.load");
}

#[test]
fn the_first_error_is_returned() {
    let k = op("mbar.wait", &["b", "ph"], &[]);
    let mut seen = Vec::new();
    let r: Result<Option<OpKind<()>>, &str> = k.try_map(|name, _| {
        seen.push(name);
        Err(name)
    });
    assert_eq!(r, Err("bar"));
    assert_eq!(seen, ["bar"]);
}
