//! Scalar arguments of a launch section resolve to the values written, signs included.

use bwsim_isa::launch::{self, ArgValue};
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::SourceFile;

fn args(launch_lines: &str) -> Vec<(String, ArgValue)> {
    let src = format!(
        "kernel k {{\n  target sm_100a\n  num_warps 4\n  param alpha: f32\n  param n: i32\n  launch {{\n    grid = [1]\n{launch_lines}  }}\n}}\n"
    );
    let file = SourceFile::new("k.tile", src);
    let k = bwsim_isa::parse(&file).unwrap_or_else(|d| panic!("{}", bwsim_isa::diag::render(&d, &file)));
    let (checked, d) = verify(&k, &VerifyOptions::default());
    let checked = checked.unwrap_or_else(|| panic!("{}", bwsim_isa::diag::render(&d, &file)));
    let l = k.launch.as_ref().expect("launch section");
    launch::resolve(&checked, l)
        .unwrap_or_else(|d| panic!("{}", bwsim_isa::diag::render(&d, &file)))
        .args
}

#[test]
fn negative_float_and_int_arguments() {
    assert_eq!(
        args("    alpha = -1.5\n    n = -7\n"),
        [
            ("alpha".to_string(), ArgValue::Float(-1.5)),
            ("n".to_string(), ArgValue::Int(-7))
        ]
    );
    assert_eq!(
        args("    alpha = 0.25\n    n = 3\n")[0],
        ("alpha".to_string(), ArgValue::Float(0.25))
    );
    // An integer for a float parameter is its value.
    assert_eq!(
        args("    alpha = -2\n    n = 3\n")[0],
        ("alpha".to_string(), ArgValue::Float(-2.0))
    );
}
