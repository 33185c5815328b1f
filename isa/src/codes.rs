//! The one table of diagnostic codes: every code any stage of bwsim can emit, with the stage
//! that emits it, its default level and what it means.
//!
//! [`Code`] is generated from the table by `define_codes!`; a [`crate::Diagnostic`] carries a
//! `Code`, so a diagnostic cannot name a code that is not listed here. The table generates
//! [`crate::verify::rules`] (the verifier's codes), the hazard checker's codes
//! (`bwsim_sim::check::codes`), `bwsim verify --rules`, the code tables of README.md and
//! docs/codes.md ([`markdown_table`]; `cargo run -p bwsim-isa --example code_tables -- --write`
//! rewrites them and a test keeps them in sync) and the strings of the JSON and SARIF output:
//! a code serialises to its name, the stable kebab-case string.
//!
//! Levels work as rustc's lints do: a *lint* code (a finding of the simulation that does not
//! stop it: a race, an uninitialised read) has a default level, error or warning; any other
//! code is a *hard* error (or a warning its emitter chose), because the stage cannot go on or
//! the run has already stopped.
//!
//! This module knows the codes; it does not know which function emits each one.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The stage of bwsim that emits a code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// Reading `.tile` text (the kernel and its launch section).
    Syntax,
    /// Reading a Gluon kernel's TTGIR (`bwsim import`, and every command given a `.ttgir`).
    Import,
    /// The static rules (`bwsim verify`, before anything runs).
    Verify,
    /// The simulator running a launch (`bwsim run`, `check`, `gpu`).
    Run,
    /// The hazard checker (`bwsim check`, and `bwsim run`, which checks its one schedule).
    Check,
    /// The PTX backend and ptxas (`bwsim ptx`, `bwsim gpu`).
    Ptx,
    /// The timing model (`bwsim time`).
    Time,
    /// Reading the input files.
    Io,
}

impl Stage {
    /// The stage's name in the tables (`syntax`, `verify`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Stage::Syntax => "syntax",
            Stage::Import => "import",
            Stage::Verify => "verify",
            Stage::Run => "run",
            Stage::Check => "check",
            Stage::Ptx => "ptx",
            Stage::Time => "time",
            Stage::Io => "io",
        }
    }
}

/// How a diagnostic is reported: an error fails the command, a warning is printed and does
/// not, an allowed one is not reported at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Allow,
    Warning,
    Error,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Allow => "allow",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

/// What the table says of a code's level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// An error that stops its stage; no flag changes it.
    Hard,
    /// A lint that is an error by default (`--warn`/`--allow` relax it).
    Deny,
    /// A lint that is a warning by default (`--deny` makes it an error).
    Warn,
}

macro_rules! define_codes {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, [$($stage:ident),+], $kind:ident, $desc:literal; )+) => {
        /// A diagnostic code: one row of the table ([`Code::ALL`]).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $( $(#[$doc])* #[doc = $desc] $variant, )+
        }

        impl Code {
            /// Every code, in table order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),+];

            /// The stable kebab-case name (`race`, `E-type`, ...), as JSON and SARIF write it.
            pub const fn name(self) -> &'static str {
                match self { $(Code::$variant => $name,)+ }
            }
            /// What the code means, in one line.
            pub const fn description(self) -> &'static str {
                match self { $(Code::$variant => $desc,)+ }
            }
            /// The stages that emit it.
            pub const fn stages(self) -> &'static [Stage] {
                match self { $(Code::$variant => &[$(Stage::$stage),+],)+ }
            }
            /// Hard error, or a lint with its default level.
            pub const fn kind(self) -> Kind {
                match self { $(Code::$variant => Kind::$kind,)+ }
            }
        }
    };
}

define_codes! {
    // ---- reading text ----
    Syntax = "syntax", [Syntax], Hard, "the text does not parse";
    // ---- the verifier's rules ----
    UnknownOp = "unknown-op", [Verify], Hard, "an operation name that does not exist";
    OpOperands = "op-operands", [Verify], Hard, "an operation with the wrong operands";
    ConstEval = "const-eval", [Verify], Hard, "a constant expression that cannot be evaluated";
    UnknownConst = "unknown-const", [Verify], Hard, "`--const` names no constant of the kernel";
    BadConst = "bad-const", [Verify], Hard, "`--const` value of the wrong kind";
    UndefinedName = "undefined-name", [Verify], Hard, "use of a name that is not in scope";
    DuplicateName = "duplicate-name", [Verify], Hard, "`let` of a name already defined in the same block";
    EType = "E-type", [Verify], Hard, "operand of the wrong type or shape";
    Layout = "layout", [Verify, Ptx], Hard, "a register layout that is malformed, unknown or not lowerable";
    ArchTarget = "arch-target", [Verify], Hard, "kernel compiled for a target it does not list";
    ArchTcgen05 = "arch-tcgen05", [Verify], Hard, "tcgen05 / tensor memory used on sm_90a";
    ArchGather = "arch-gather", [Verify], Hard, "gather4/scatter4 used on sm_90a";
    ArchWgmma = "arch-wgmma", [Verify], Hard, "wgmma used on sm_100a";
    ArchClc = "arch-clc", [Verify], Hard, "cluster launch control (clc.try_cancel, clc.query) used on sm_90a (it needs sm_100a)";
    NumWarps = "num-warps", [Verify], Hard, "num_warps out of range";
    WsRegs = "ws-regs", [Verify], Hard, "warp_specialize register budget not a multiple of 8 in [24, 256]";
    WsWarps = "ws-warps", [Verify], Hard, "worker warp count out of range, or too many warps in all";
    WsTileCapture = "ws-tile-capture", [Verify], Hard, "worker partition reads a register tile of another partition";
    WsNested = "ws-nested", [Verify], Hard, "more than one warp_specialize region";
    StaticAssert = "static-assert", [Verify], Hard, "a static_assert is false";
    StaticFor = "static-for", [Verify], Hard, "static_for with non-constant or huge bounds";
    MbarCount = "mbar-count", [Verify], Hard, "mbarrier expected count outside 1..2^20";
    MbarType = "mbar-type", [Verify], Hard, "mbarrier operation on something that is not a barrier";
    TmaRank = "tma-rank", [Verify], Hard, "descriptor rank outside 1..5, or wrong coordinate count";
    TmaBox = "tma-box", [Verify], Hard, "TMA box dimension outside 1..256";
    TmaElemStrides = "tma-elem-strides", [Verify], Hard, "TMA element stride outside 1..8";
    TmaBoxInner = "tma-box-inner", [Verify], Hard, "TMA box inner dimension not a multiple of 16 bytes";
    TmaSwizzle = "tma-swizzle", [Verify], Hard, "TMA box inner dimension inconsistent with the swizzle span";
    TmaSmem = "tma-smem", [Verify], Hard, "TMA shared buffer that cannot be copied through the descriptor";
    TmaDtype = "tma-dtype", [Verify], Hard, "TMA descriptor element type differs from the shared buffer's (reported; the run goes on)";
    TmaBufferBox = "tma-buffer-box", [Verify], Hard, "TMA copy whose pieces of the buffer are not the descriptor's box (reported; the run goes on)";
    GatherDesc = "gather-desc", [Verify], Hard, "gather/scatter descriptor block is not [1, BLOCK_Y]";
    GatherRows = "gather-rows", [Verify], Hard, "gather/scatter with fewer than 8 rows or not a multiple of 4";
    GatherCols = "gather-cols", [Verify], Hard, "gather/scatter BLOCK_Y below (32 / bitwidth) * 8";
    GatherOffsetLayout = "gather-offset-layout", [Verify], Hard, "row offsets not in chunks of 4 registers broadcast across lanes";
    NvmmaInner = "nvmma-inner", [Verify], Hard, "NVMMA buffer narrower than its swizzle span";
    SmemCapacity = "smem-capacity", [Verify], Hard, "more shared memory than a CTA has";
    TmemCapacity = "tmem-capacity", [Verify], Hard, "more than 512 TMEM columns";
    TmemAllocCols = "tmem-alloc-cols", [Verify], Hard, "manual TMEM allocation not a power of two in 32..512";
    TmemLayout = "tmem-layout", [Verify], Hard, "TMEM block M not 64 or 128, or scale factors that are not 8-bit";
    TmemDealloc = "tmem-dealloc", [Verify, Run], Hard, "tmem.dealloc of a scoped allocation (error), or while tcgen05 operations are in flight (warning)";
    TmemLanes = "tmem-lanes", [Verify], Hard, "tmem.load/store by a partition that cannot reach every lane";
    TmemReinterpret = "tmem-reinterpret", [Verify, Run], Hard, "tmem.reinterpret needing more TMEM columns than the allocation has";
    Tcgen05CpLayout = "tcgen05-cp-layout", [Verify], Hard, "tcgen05.cp source/destination layouts with no copy atom";
    MmaShape = "mma-shape", [Verify], Hard, "tcgen05.mma M/N/K outside the instruction shapes";
    MmaDtype = "mma-dtype", [Verify], Hard, "tcgen05.mma operand types outside the kinds";
    MmaMajor = "mma-major", [Verify], Hard, "MN-major operand of a type that must be K-major";
    MmaScale = "mma-scale", [Verify], Hard, "block-scaled MMA scale factors of the wrong type or layout";
    WgmmaShape = "wgmma-shape", [Verify], Hard, "wgmma shape, type or warp count outside the instruction";
    ViewBounds = "view-bounds", [Verify], Hard, "constant index or slice outside the buffer";
    TileSize = "tile-size", [Verify], Hard, "register tile with more than 2^20 elements";
    SmemReinterpret = "smem-reinterpret", [Verify, Run], Hard, "reinterpret larger than the viewed bytes";
    SmemLayout = "smem-layout", [Verify], Hard, "unknown shared layout or swizzle width";
    Launch = "launch", [Verify, Run], Hard, "launch section missing or inconsistent with the parameters";
    InlineAsm = "inline-asm", [Verify, Run], Hard, "an `inline_asm` snippet outside the PTX subset bwsim interprets (or needing sm_100a), or one that fails as it runs";
    // ---- importing TTGIR ----
    TtgirSyntax = "ttgir-syntax", [Import], Hard, "TTGIR text that is not the MLIR Triton prints";
    TtgirUnsupportedOp = "ttgir-unsupported-op", [Import], Hard, "a TTGIR operation bwsim does not import";
    TtgirUnsupported = "ttgir-unsupported", [Import], Hard, "a supported TTGIR operation used in a way bwsim's IR cannot express";
    TtgirUnsupportedType = "ttgir-unsupported-type", [Import], Hard, "a TTGIR type, layout or attribute bwsim does not know";
    TtgirUndefined = "ttgir-undefined", [Import], Hard, "a TTGIR operand that names no value defined before it";
    TtgirModule = "ttgir-module", [Import], Hard, "no `tt.func` to import, or more than one public one";
    TtgirCascade = "ttgir-cascade", [Import], Hard, "a use of a value whose definition failed to import (dropped)";
    TtgirVersion = "ttgir-version", [Import], Hard, "TTGIR of a Triton release bwsim does not support, or whose release cannot be settled";
    // ---- the hazard checker ----
    Race = "race", [Check], Deny, "conflicting shared- or tensor-memory accesses (at least one write) not ordered by happens-before";
    MissingFence = "missing-fence", [Check], Deny, "generic- and async-proxy accesses (TMA, MMA operand) ordered without `fence.async_shared` between them";
    StaleTensormap = "stale-tensormap", [Check], Deny, "a TMA copy through a tensor map built on the device (`tma.make_desc`) that its CTA did not acquire in the tensormap proxy (`tma.desc_acquire`) after the map was written: the copy may read the old map";
    ReadBeforeComplete = "read-before-complete", [Check], Deny, "a read of a TMA destination or MMA accumulator before its completion was observed";
    WriteWhileInFlight = "write-while-in-flight", [Check], Deny, "a write to bytes another asynchronous operation (cp.async, TMA, tcgen05.cp, MMA, wgmma) may still be writing or reading";
    GlobalRace = "global-race", [Check], Deny, "conflicting global-memory accesses (at least one writes, not both atomic), of one CTA or of two, not ordered by happens-before (a release/acquire atomic pair orders CTAs)";
    PhaseAliasing = "phase-aliasing", [Check], Deny, "an `mbar.wait` that means a phase its barrier has already moved past";
    Deadlock = "deadlock", [Run, Check, Time], Hard, "every agent blocked with nothing in flight (with the wait-for graph)";
    TxMismatch = "tx-mismatch", [Check], Hard, "`mbar.expect` bytes differ from the bytes the copies deliver (the phase never completes)";
    OverArrival = "over-arrival", [Run, Check], Hard, "an arrival beyond the pending count of the phase (arrival underflow; the hardware traps)";
    UninitRead = "uninit-read", [Check], Warn, "a read of shared or tensor memory nothing wrote in this launch (a warning; it says whether the undefined bytes reach a global store, an address, a branch condition or an MMA operand)";
    TmemLeak = "tmem-leak", [Check], Deny, "tensor memory still allocated when the CTA exits";
    ClusterExit = "cluster-exit", [Check], Deny, "a CTA exits while another CTA of its cluster may still access its shared memory (no cluster barrier or observed remote arrival orders the peer's last access before the exit)";
    BarrierMisuse = "barrier-misuse", [Run, Check, Time], Hard, "an mbarrier used before `mbar.init` or after `mbar.invalidate`";
    BarrierReinit = "barrier-reinit", [Run, Check], Deny, "`mbar.init` of an mbarrier that is still initialised (no `mbar.invalidate` since its last `mbar.init`)";
    IllegalInstruction = "illegal-instruction", [Run, Check], Hard, "an operation the hardware traps on (misaligned TMA coordinates, ...)";
    DeviceAssert = "device-assert", [Run, Check], Hard, "a `device.assert` (Gluon's `gl.device_assert`, compiled in debug mode) found a false element: the launch stops with cudaErrorAssert";
    UnspecifiedResult = "unspecified-result", [Run, Check], Hard, "an operation whose result no public source states for these operands (four-lane fp8 arithmetic past the largest finite value, or of a NaN or infinite operand): bwsim stops rather than guess";
    ClcMisuse = "clc-misuse", [Run, Check], Deny, "`clc.try_cancel` after the CTA read a response that cancelled nothing (undefined in PTX)";
    // ---- the simulator ----
    MisalignedAddress = "misaligned-address", [Run], Hard, "a hardware trap: cudaErrorMisalignedAddress";
    IllegalAddress = "illegal-address", [Run], Hard, "a hardware trap: cudaErrorIllegalAddress (an access outside its memory)";
    LaunchFailure = "launch-failure", [Run], Hard, "a hardware trap: cudaErrorLaunchFailure";
    SimUnsupported = "sim-unsupported", [Run, Time], Hard, "a construct the simulator does not model";
    CtaPair = "cta-pair", [Run], Hard, "a `cta_group=2` operation in a launch whose clusters do not hold an even number of CTAs (pairs of ranks 2k, 2k + 1)";
    OperandRange = "operand-range", [Run], Hard, "a value that does not fit the instruction's 32-bit signed operand (TMA coordinates, offsets)";
    SimError = "sim-error", [Run, Time], Hard, "a run-time error of the kernel that the simulator stops on (a `for` step of 0, ...)";
    StepLimit = "step-limit", [Run], Hard, "the run reached its step limit (`--max-steps`)";
    WallTimeLimit = "wall-time-limit", [Run], Hard, "the run reached its wall-time limit (`--max-wall-time`)";
    MemoryLimit = "memory-limit", [Run], Hard, "the launch needs more memory than its limit (`--max-memory`)";
    TraceLimit = "trace-limit", [Run], Hard, "the trace reached its event limit (`--max-trace-events`)";
    // ---- the PTX backend ----
    PtxUnsupported = "ptx-unsupported", [Ptx], Hard, "an operation the PTX backend does not lower";
    PtxInvalid = "ptx-invalid", [Ptx], Hard, "an operation whose operands have no PTX form";
    Ptxas = "ptxas", [Ptx], Hard, "ptxas refused (error) or warned about (warning) the generated PTX";
    // ---- the timing model ----
    Occupancy = "occupancy", [Time], Hard, "the kernel does not fit on one SM of the chip";
    TimingLimit = "timing-limit", [Time], Hard, "the timing model reached its event limit";
    // ---- files ----
    Io = "io", [Io], Hard, "an input file that cannot be read";
}

impl Code {
    /// The name ([`Code::name`]).
    pub const fn as_str(self) -> &'static str {
        self.name()
    }
    /// The code named `name`, if any.
    pub fn from_name(name: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.name() == name)
    }
    /// The level a diagnostic of this code has when no flag changes it.
    pub const fn default_level(self) -> Level {
        match self.kind() {
            Kind::Hard | Kind::Deny => Level::Error,
            Kind::Warn => Level::Warning,
        }
    }
    /// Whether `--deny`, `--warn` and `--allow` may name it.
    pub const fn is_lint(self) -> bool {
        !matches!(self.kind(), Kind::Hard)
    }
    /// Whether `stage` emits it.
    pub fn emitted_by(self, stage: Stage) -> bool {
        self.stages().contains(&stage)
    }
    /// The codes a stage emits, in table order.
    pub fn of_stage(stage: Stage) -> impl Iterator<Item = Code> {
        Code::ALL.iter().copied().filter(move |c| c.emitted_by(stage))
    }
    /// The stages as the tables write them (`verify, run`).
    pub fn stage_names(self) -> String {
        self.stages()
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
    /// The level column of the tables: `error` (a hard error), `deny` or `warn` (lints by
    /// their default level).
    pub const fn level_name(self) -> &'static str {
        match self.kind() {
            Kind::Hard => "error",
            Kind::Deny => "deny",
            Kind::Warn => "warn",
        }
    }
}

/// Tests and tools compare a code with its name (`d.code == "race"`).
impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.name() == other
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

impl PartialEq<String> for Code {
    fn eq(&self, other: &String) -> bool {
        self.name() == other
    }
}

impl PartialEq<Code> for &str {
    fn eq(&self, other: &Code) -> bool {
        *self == other.name()
    }
}

impl PartialEq<Code> for str {
    fn eq(&self, other: &Code) -> bool {
        self == other.name()
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Code {
    type Err = UnknownCode;
    fn from_str(s: &str) -> Result<Code, UnknownCode> {
        Code::from_name(s).ok_or_else(|| UnknownCode(s.to_string()))
    }
}

/// A name that is no code of the table.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a diagnostic code (`bwsim verify --rules` lists them)")]
pub struct UnknownCode(pub String);

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Code, D::Error> {
        let s = String::deserialize(d)?;
        Code::from_name(&s).ok_or_else(|| serde::de::Error::custom(UnknownCode(s)))
    }
}

/// The code table as Markdown (`| code | stage | level | what |`), of the codes `keep` keeps.
pub fn markdown_table(keep: impl Fn(Code) -> bool) -> String {
    let mut s = String::from("| code | stage | level | what |\n|---|---|---|---|\n");
    for &c in Code::ALL.iter().filter(|&&c| keep(c)) {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            c.name(),
            c.stage_names(),
            c.level_name(),
            c.description().replace('|', "\\|")
        ));
    }
    s
}

/// A generated code table in a Markdown file: the text between `<!-- codes:MARKER -->` and
/// `<!-- /codes:MARKER -->` in `path` (relative to the repository root) is `table`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocTable {
    pub path: &'static str,
    pub marker: &'static str,
    pub table: String,
}

/// The code tables of the documentation: the hazard checker's codes in README.md, every code
/// in docs/codes.md.
pub fn doc_tables() -> Vec<DocTable> {
    vec![
        DocTable {
            path: "README.md",
            marker: "check",
            table: markdown_table(|c| c.emitted_by(Stage::Check)),
        },
        DocTable {
            path: "docs/codes.md",
            marker: "all",
            table: markdown_table(|_| true),
        },
    ]
}

impl DocTable {
    /// `text` with this table between its markers; `None` when the markers are missing.
    pub fn splice(&self, text: &str) -> Option<String> {
        let open = format!("<!-- codes:{} -->\n", self.marker);
        let close = format!("<!-- /codes:{} -->", self.marker);
        let a = text.find(&open)? + open.len();
        let b = a + text[a..].find(&close)?;
        Some(format!("{}{}{}", &text[..a], self.table, &text[b..]))
    }
}

/// `bwsim verify --rules`: every code, one line each (name, stages, level, meaning).
pub fn rules_listing() -> String {
    let mut s = String::new();
    for &c in Code::ALL {
        s.push_str(&format!(
            "{:<22} {:<13} {:<7} {}\n",
            c.name(),
            c.stage_names(),
            c.level_name(),
            c.description()
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_kebab_case_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for &c in Code::ALL {
            assert!(seen.insert(c.name()), "`{c}` twice");
            assert!(
                c.name().chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-')
                    && !c.name().starts_with('-'),
                "`{c}` is not kebab-case"
            );
            assert_eq!(Code::from_name(c.name()), Some(c));
            let json = serde_json::to_string(&c).expect("a code serialises");
            assert_eq!(json, format!("\"{}\"", c.name()));
            assert_eq!(serde_json::from_str::<Code>(&json).expect("and reads back"), c);
            assert!(!c.description().is_empty() && !c.stages().is_empty());
        }
        assert!(serde_json::from_str::<Code>("\"no-such-code\"").is_err());
    }

    #[test]
    fn lints_have_default_levels_and_hard_codes_are_errors() {
        assert_eq!(Code::TmemLeak.default_level(), Level::Error);
        assert_eq!(Code::Race.default_level(), Level::Error);
        assert_eq!(Code::Syntax.default_level(), Level::Error);
        assert_eq!(Code::UninitRead.default_level(), Level::Warning);
        assert!(Code::UninitRead.is_lint() && Code::Race.is_lint() && !Code::Deadlock.is_lint());
    }

    #[test]
    fn the_markdown_table_has_one_row_per_code() {
        let t = markdown_table(|c| c.emitted_by(Stage::Check));
        assert!(t.contains("| `deadlock` | run, check, time | error | "), "{t}");
        assert!(t.contains("| `race` | check | deny | "), "{t}");
        assert_eq!(t.lines().count(), 2 + Code::of_stage(Stage::Check).count());
        assert_eq!(rules_listing().lines().count(), Code::ALL.len());
    }
}
