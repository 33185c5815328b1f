//! The `// shapes:` directive of the Gluon fixtures' launch sidecars: smaller launch values
//! for the default tier's runs (docs: DEVELOPERS.md, "Sidecar directives"), read by the TTGIR
//! corpus (gluon/tests/gluon_corpus.rs) and the PTX corpus (tests/ptx_corpus.rs).

/// `grid=[2] xnumel=64 a=[64, 400]`: entries separated by blanks outside brackets.
pub fn shape_list(v: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let (mut cur, mut depth) = (String::new(), 0i32);
    for ch in v.chars().chain(std::iter::once(' ')) {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => {}
        }
        if ch.is_whitespace() && depth == 0 {
            if !cur.is_empty() {
                let (n, val) = cur
                    .split_once('=')
                    .ok_or_else(|| format!("`{cur}` is not NAME=VALUE"))?;
                out.push((n.trim().to_string(), val.trim().to_string()));
                cur.clear();
            }
        } else {
            cur.push(ch);
        }
    }
    Ok(out)
}

/// The sidecar's launch with `shapes` applied: `grid = [...]` and `NAME = ...` lines get the
/// new value, `tensor NAME: DTYPE[...]` its new shape.
pub fn apply_shapes(launch: &str, shapes: &[(String, String)]) -> Result<String, String> {
    let mut lines: Vec<String> = launch.lines().map(String::from).collect();
    for (name, value) in shapes {
        let mut hit = false;
        for l in &mut lines {
            let t = l.trim_start();
            let indent = &l[..l.len() - t.len()];
            if let Some(rest) = t.strip_prefix(&format!("tensor {name}:")) {
                let (dtype, tail) = rest
                    .split_once('[')
                    .and_then(|(d, r)| Some((d, r.split_once(']')?.1)))
                    .ok_or_else(|| format!("`{t}` has no shape"))?;
                *l = format!("{indent}tensor {name}:{dtype}{value}{tail}");
                hit = true;
            } else if t.split_once('=').is_some_and(|(n, _)| n.trim() == name.as_str()) {
                *l = format!("{indent}{name} = {value}");
                hit = true;
            }
        }
        if !hit {
            return Err(format!("`shapes: {name}=...`: the launch has no `{name}`"));
        }
    }
    Ok(lines.join("\n") + "\n")
}
