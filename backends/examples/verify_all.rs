use bwsim_isa::verify::{verify, VerifyOptions};
fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/tiles");
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        match bwsim_isa::parser::parse(&text) {
            Err(d) => println!(
                "{}: parse error {:?}",
                p.display(),
                d.iter().map(|d| format!("{:?}", d)).collect::<Vec<_>>()
            ),
            Ok(k) => {
                for t in k.targets.clone() {
                    let (c, d) = verify(
                        &k,
                        &VerifyOptions {
                            target: Some(t),
                            overrides: vec![],
                        },
                    );
                    println!(
                        "{} {}: ok={} diags={}",
                        p.file_name().unwrap().to_string_lossy(),
                        t,
                        c.is_some(),
                        d.len()
                    );
                    for x in d {
                        println!("   {:?}", x);
                    }
                }
            }
        }
    }
}
