//! The event trace: what a run records (issue / start / complete of async operations,
//! arrivals, tx changes, phase flips, waits begun and satisfied, fences) and its two
//! renderings, the compact text form and Chrome trace JSON.

mod common;
use bwsim_isa::SourceFile;
use bwsim_sim::AsyncKind;
use common::*;

const SMALL: &str = include_str!("tiles/trace/small.tile");

fn small_trace() -> (String, serde_json::Value) {
    let mut s = Scripted::default()
        .with(AsyncKind::TmaLoad, &[100])
        .with(AsyncKind::TmaStoreRead, &[50])
        .with(AsyncKind::TmaStoreWrite, &[70]);
    let r = run_sched(SMALL, &[], &mut s);
    assert_ok(SMALL, &r);
    let f = SourceFile::new("small.tile", SMALL);
    (r.trace.render(Some(&f)), r.trace.chrome_json(Some(&f)))
}

/// Every event of the small kernel, in order, with its unit and its source line.
#[test]
fn text_form_lists_each_event_with_its_agent_and_line() {
    let (text, _) = small_trace();
    let line = |needle: &str| line_col_of(SMALL, needle).0;
    // Each event, `@{OP}` standing for the line of the op it carries (the kernel's start and end
    // carry none).
    let want: Vec<String> = "\
cta0.default start
cta0.default mbar.init bar=0x400 count=1 @{mbar.init}
cta0.default expect_tx bar=0x400 bytes=1024 tx=1024 @{mbar.expect}
cta0.default arrive bar=0x400 count=1 pending=0 @{mbar.expect}
cta0.default issue tma.load #1 @{tma.load}
cta0.tma start tma.load #1 @{tma.load}
cta0.default wait bar=0x400 parity=0 @{mbar.wait}
cta0.tma piece tma.load #1 bytes=1024 @{tma.load}
cta0.tma complete_tx bar=0x400 bytes=1024 tx=0 @{tma.load}
cta0.tma phase bar=0x400 -> 1 @{tma.load}
cta0.tma complete tma.load #1 @{tma.load}
cta0.default wait done bar=0x400 parity=0 @{mbar.wait}
cta0.default fence.async_shared @{fence.async_shared}
cta0.default issue tma.store #2 @{tma.store dst}
cta0.tma start tma.store #2 @{tma.store dst}
cta0.default blocked tma.store_wait @{tma.store_wait}
cta0.default resumed tma.store_wait @{tma.store_wait}
cta0.default end
cta0.tma complete tma.store #2 @{tma.store dst}"
        .lines()
        .map(|l| match l.split_once(" @{") {
            Some((event, op)) => format!("{event} @{}:3", line(op.trim_end_matches('}'))),
            None => l.to_string(),
        })
        .collect();
    let got: Vec<String> = text
        .lines()
        .map(|l| {
            let mut w = l.split_whitespace();
            let t = w.next().expect("time");
            assert!(t.parse::<u64>().is_ok(), "line starts with its logical time: {l}");
            let rest: Vec<&str> = w.collect();
            // `end` carries the kernel's span; drop locations of start/end.
            let s = rest.join(" ");
            if rest.get(1).is_some_and(|x| *x == "end" || *x == "start") && rest.len() <= 3 {
                rest[..2].join(" ")
            } else {
                s
            }
        })
        .collect();
    assert_eq!(got, want, "\n{text}");
    // Times: the load lands 100 after its issue, the store's global write 50 + 70 after its.
    let time_of = |needle: &str| -> u64 {
        text.lines()
            .find(|l| l.contains(needle))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("no `{needle}` line"))
    };
    assert_eq!(time_of("piece tma.load") - time_of("issue tma.load"), 100);
    assert_eq!(time_of("complete tma.store") - time_of("issue tma.store"), 120);
    assert_eq!(time_of("resumed tma.store_wait") - time_of("issue tma.store"), 50);
}

#[test]
fn same_seed_same_text() {
    let a = run_seed(SMALL, &[], 9).trace.render(None);
    let b = run_seed(SMALL, &[], 9).trace.render(None);
    assert_eq!(a, b);
    assert!(!a.is_empty());
}

/// Chrome trace JSON: a named track per partition and unit, every async slice opened ("b")
/// and closed ("e") on its unit's track with the same id, timestamps in order per track.
#[test]
fn chrome_json_tracks_and_async_slices() {
    let (_, v) = small_trace();
    let evs = v["traceEvents"].as_array().expect("traceEvents");
    let names: Vec<&str> = evs
        .iter()
        .filter(|e| e["ph"] == "M")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert_eq!(names, ["cta0.default", "cta0.tma"]);
    let mut open = std::collections::BTreeMap::new();
    let mut last_ts = std::collections::BTreeMap::new();
    for e in evs.iter().filter(|e| e["ph"] != "M") {
        let (tid, ts) = (e["tid"].as_u64().expect("tid"), e["ts"].as_u64().expect("ts"));
        assert!(
            ts >= *last_ts.get(&tid).unwrap_or(&0),
            "time goes backwards on track {tid}"
        );
        last_ts.insert(tid, ts);
        match e["ph"].as_str() {
            Some("b") => {
                open.insert(e["id"].as_u64().expect("id"), (e["name"].clone(), tid));
            }
            Some("e") => {
                let (name, t) = open
                    .remove(&e["id"].as_u64().expect("id"))
                    .expect("closed an open slice");
                assert_eq!((name, t), (e["name"].clone(), tid));
            }
            Some("i") => assert!(e["name"].is_string()),
            other => panic!("unexpected phase {other:?}"),
        }
    }
    assert!(open.is_empty(), "slices never closed: {open:?}");
    let slices = evs.iter().filter(|e| e["ph"] == "b").count();
    assert_eq!(slices, 2, "the TMA load and the TMA store");
}
