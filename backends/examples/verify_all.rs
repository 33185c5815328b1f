use bwsim_isa::verify::{verify, VerifyOptions};
fn main() -> std::io::Result<()> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/tiles");
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let text = std::fs::read_to_string(&p)?;
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
                    println!("{} {}: ok={} diags={}", p.display(), t, c.is_some(), d.len());
                    for x in d {
                        println!("   {:?}", x);
                    }
                }
            }
        }
    }
    Ok(())
}
