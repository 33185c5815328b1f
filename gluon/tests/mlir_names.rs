//! MLIR text as MLIR defines it: value names are any `suffix-id` (`%c-1_i32`, `%a.b`, `%x$1`,
//! `%0`), and a kernel whose values carry such names imports, prints as `.tile` text that parses
//! back, and computes what its operations say.

use bwsim_isa::launch;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_sim::{Outcome, RunOptions};
use proptest::prelude::*;

/// A module whose body binds each of `names`, in order, to an integer computed from the
/// previous one, then stores the last into `out_ptr[0]`.
fn chain_module(names: &[String]) -> String {
    let mut body = String::new();
    body.push_str(&format!(
        "    %{} = arith.constant 3 : i32 loc(#loc2)\n",
        names[0]
    ));
    for w in names.windows(2) {
        body.push_str(&format!(
            "    %{} = arith.addi %{}, %{} : i32 loc(#loc2)\n",
            w[1], w[0], w[0]
        ));
    }
    let last = names.last().expect("at least one name");
    format!(
        "#loc1 = loc(\"kern.py\":1:0)\n#loc2 = loc(\"kern.py\":3:4)\n\
         module attributes {{\"ttg.num-warps\" = 4 : i32, ttg.target = \"cuda:100\"}} {{\n  \
         tt.func public @k(%out_ptr: !tt.ptr<i32> loc(\"out_ptr\"(#loc1))) attributes {{noinline = false}} {{\n\
         {body}    tt.store %out_ptr, %{last} : !tt.ptr<i32> loc(#loc2)\n    tt.return loc(#loc1)\n  \
         }} loc(#loc1)\n}} loc(#loc1)\n"
    )
}

/// MLIR's suffix-id: digits only, or a letter or `$._-` followed by letters, digits, `$._-`.
fn suffix_id() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{1,4}",
        "[a-zA-Z$._-][a-zA-Z0-9$._-]{0,10}",
        // The forms Triton prints.
        Just("c-1_i32".to_string()),
        Just("a_desc.shape.0".to_string()),
        Just("acc_state.phase_2".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn generated_value_names_lex_as_one_token(name in suffix_id()) {
        let text = format!("%{name} = arith.constant -1 : i32");
        let toks = bwsim_gluon::lexer::lex(&text, 0).expect("lexes");
        prop_assert_eq!(&toks[0].tok, &bwsim_gluon::lexer::Tok::Value(name.clone()));
        prop_assert_eq!(&toks[1].tok, &bwsim_gluon::lexer::Tok::Punct("="));
    }

    #[test]
    fn kernels_with_generated_value_names_import_and_round_trip(
        names in prop::collection::hash_set(suffix_id(), 1..6)
    ) {
        let names: Vec<String> = names.into_iter().collect();
        let text = chain_module(&names);
        let launch = "launch {\n  grid = [1]\n  tensor out: i32[1] = fill(0)\n  out_ptr = out\n  outputs = [out]\n}\n";
        let l = bwsim_gluon::import_text("k.ttgir", &text, None, Some(("k.launch".into(), launch.into())));
        let k = match l.kernel {
            Ok(k) => k,
            Err(d) => return Err(TestCaseError::fail(bwsim_isa::diag::render(&d, &l.source))),
        };
        let printed = bwsim_isa::print(&k);
        let back = bwsim_isa::parser::parse(&printed)
            .map_err(|d| TestCaseError::fail(format!("{printed}\n{d:?}")))?;
        prop_assert_eq!(&back, &k);
        // 3, doubled once per further name.
        let expected = 3i64 << (names.len() - 1);
        let (c, d) = verify(&k, &VerifyOptions::default());
        let c = c.ok_or_else(|| TestCaseError::fail(format!("{d:?}")))?;
        let plan = launch::resolve(&c, k.launch.as_ref().expect("launch"))
            .map_err(|d| TestCaseError::fail(format!("{d:?}")))?;
        let inputs = launch::materialize(&plan, 0).expect("tiny launch");
        let r = bwsim_sim::run(&c, &plan, inputs, &RunOptions::default());
        prop_assert_eq!(r.outcome, Outcome::Completed);
        let out = r.tensor("out").expect("output");
        prop_assert_eq!(out.get(0), expected as f64);
    }
}
