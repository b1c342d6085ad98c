//! `catalog/devices.toml`: each GPU's SM/CU count, memory size, dense peak TFLOP/s per
//! data type and HBM bandwidth, the `deviceProperties.name` spellings it goes by, and the
//! vendor document every figure was taken from. The roofline reads the peaks; this file
//! only loads, validates and matches rows.
//!
//! Matching ([`DeviceTable::match_device`]) takes what a trace says about its GPU
//! ([`DeviceFacts`]): the name first (a row's name or alias, ASCII case and surrounding
//! blanks ignored), else the SM count and memory size (ROCm traces often carry empty
//! names). Only a unique row counts; two rows that fit equally (H100 SXM and H800 have
//! the same SMs and memory) leave the device unknown rather than guessed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::one_line;
use crate::error::TriageError;

/// File name of the device table inside a catalog directory.
pub const DEVICES_FILE: &str = "devices.toml";

/// The built-in device table.
pub const BUILTIN_DEVICES: &str = include_str!("../../../catalog/devices.toml");

/// How far a trace's `totalGlobalMem` may sit from a row's memory size and still be that
/// row: drivers report a little less than the vendor's figure (a B200 shows 178.4 GiB of
/// its 180, an A100 40GB 39.4 GiB), and the parts that share an SM count differ by far
/// more (A100 40 vs 80 GB, MI300X 192 vs MI325X 256 GiB).
pub const MEMORY_TOLERANCE: f64 = 0.10;

/// A data type a peak is given for. Dense peaks: tensor/matrix cores where the part has
/// them (`fp32` is the plain FP32 peak: NVIDIA has no FP32 tensor path).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    Fp64,
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
    Fp4,
    Int8,
}

impl Dtype {
    /// The key as the TOML file and the JSON report spell it.
    pub fn label(self) -> &'static str {
        match self {
            Dtype::Fp64 => "fp64",
            Dtype::Fp32 => "fp32",
            Dtype::Tf32 => "tf32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
            Dtype::Fp4 => "fp4",
            Dtype::Int8 => "int8",
        }
    }
}

/// One GPU of the table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceSpec {
    /// The row's name (what `--device` and the report show).
    pub name: String,
    /// `deviceProperties.name` spellings of this part (also accepted by `--device`).
    pub aliases: Vec<String>,
    /// SMs (NVIDIA) or CUs (AMD) as `numSms` reports them; `None`: not confirmed.
    pub sms: Option<u32>,
    /// Memory size in bytes (the vendor's figure read as GiB); `None`: not given.
    pub memory_bytes: Option<u64>,
    /// Dense peak TFLOP/s per data type (only the types the vendor document gives).
    pub peak_tflops: BTreeMap<Dtype, f64>,
    /// Peak memory bandwidth in TB/s.
    pub hbm_tb_per_s: f64,
    /// The vendor document (URL, title, table or page) the figures come from.
    pub citation: String,
    /// How the figures were checked against that document (`checked`: a verdict of
    /// [`CHECK_VERDICTS`] and what it covered); catalog provenance, not in the report.
    #[serde(skip)]
    pub checked: Option<String>,
}

/// How a row's figures were checked, the words its `checked` starts with: against the
/// cited page itself, against a page reproducing its table, or not at all.
pub const CHECK_VERDICTS: [&str; 3] = ["cited page:", "reproduction:", "not verified:"];

impl DeviceSpec {
    /// Whether `name` is this row's name or one of its aliases.
    pub fn is_named(&self, name: &str) -> bool {
        let name = name.trim();
        !name.is_empty()
            && std::iter::once(&self.name)
                .chain(&self.aliases)
                .any(|n| n.eq_ignore_ascii_case(name))
    }

    /// Whether a device with `sms` SMs and `memory_bytes` of memory is this row.
    fn fits(&self, sms: u32, memory_bytes: u64) -> bool {
        let (Some(row_sms), Some(row_memory)) = (self.sms, self.memory_bytes) else {
            return false;
        };
        // Precision loss is irrelevant at a 10% tolerance.
        #[expect(clippy::cast_precision_loss, reason = "a ratio, compared at 10%")]
        let off = (memory_bytes as f64 - row_memory as f64).abs() / row_memory as f64;
        row_sms == sms && off <= MEMORY_TOLERANCE
    }
}

/// What a trace says about one GPU (`deviceProperties`), as plain values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceFacts<'a> {
    pub name: &'a str,
    pub sms: Option<u32>,
    pub memory_bytes: Option<u64>,
}

/// How a report's device was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MatchedBy {
    /// The trace's `deviceProperties.name` is a row's name or alias.
    Name,
    /// The trace's SM count and memory size fit exactly one row.
    SmsAndMemory,
    /// `--device NAME`.
    Flag,
    /// `--device-spec FILE`.
    SpecFile,
}

impl MatchedBy {
    /// The value of the report's `device.matched_by`.
    pub fn label(self) -> &'static str {
        match self {
            MatchedBy::Name => "name",
            MatchedBy::SmsAndMemory => "sms-and-memory",
            MatchedBy::Flag => "flag",
            MatchedBy::SpecFile => "spec-file",
        }
    }
}

/// A row chosen for a trace, and by which rule.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceMatch {
    pub spec: DeviceSpec,
    pub matched_by: MatchedBy,
}

/// Every row of `devices.toml`, in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceTable {
    pub devices: Vec<DeviceSpec>,
}

impl DeviceTable {
    /// The row named `name` (its name or an alias), if any.
    pub fn find(&self, name: &str) -> Option<&DeviceSpec> {
        self.devices.iter().find(|d| d.is_named(name))
    }

    /// The row `facts` describe: by name, else by SM count and memory size when exactly
    /// one row fits; `None` when no rule gives a unique row.
    pub fn match_device(&self, facts: &DeviceFacts<'_>) -> Option<DeviceMatch> {
        if let Some(spec) = self.find(facts.name) {
            return Some(DeviceMatch {
                spec: spec.clone(),
                matched_by: MatchedBy::Name,
            });
        }
        let (Some(sms), Some(memory)) = (facts.sms, facts.memory_bytes) else {
            return None;
        };
        let mut fitting = self.devices.iter().filter(|d| d.fits(sms, memory));
        match (fitting.next(), fitting.next()) {
            (Some(spec), None) => Some(DeviceMatch {
                spec: spec.clone(),
                matched_by: MatchedBy::SmsAndMemory,
            }),
            _ => None,
        }
    }
}

/// `dir`'s `devices.toml` when it has one, else the built-in table.
pub fn load_devices(dir: Option<&Path>) -> Result<DeviceTable, TriageError> {
    if let Some(dir) = dir {
        let path = dir.join(DEVICES_FILE);
        if path.exists() {
            return parse_devices(&read(&path)?, &path);
        }
    }
    parse_devices(BUILTIN_DEVICES, Path::new("built-in catalog/devices.toml"))
}

/// `--device-spec FILE`: a file in the table's format holding exactly one row.
pub fn load_device_spec(path: &Path) -> Result<DeviceSpec, TriageError> {
    let mut table = parse_devices(&read(path)?, path)?;
    if table.devices.len() != 1 {
        return Err(TriageError::input(
            path,
            format!(
                "--device-spec needs exactly one [[device]] row, found {}",
                table.devices.len()
            ),
        ));
    }
    Ok(table.devices.remove(0))
}

fn read(path: &Path) -> Result<String, TriageError> {
    std::fs::read_to_string(path).map_err(|e| TriageError::input(path, format!("cannot read: {e}")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DevicesFile {
    schema: u32,
    #[serde(default)]
    device: Vec<DeviceEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceEntry {
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
    sms: Option<u32>,
    memory_gib: Option<u32>,
    hbm_tb_per_s: f64,
    peak_tflops: BTreeMap<Dtype, f64>,
    citation: String,
    checked: Option<String>,
}

/// Parses and validates a device table; `path` only names the source in errors.
pub fn parse_devices(text: &str, path: &Path) -> Result<DeviceTable, TriageError> {
    let error = |message: String| TriageError::input(PathBuf::from(path), message);
    let file: DevicesFile = toml::from_str(text).map_err(|e| {
        error(format!(
            "invalid device table: {}",
            one_line(&e.to_string())
        ))
    })?;
    if file.schema != 1 {
        return Err(error(format!(
            "unsupported device table schema {} (this build reads 1)",
            file.schema
        )));
    }
    let mut devices: Vec<DeviceSpec> = Vec::new();
    for (i, entry) in file.device.into_iter().enumerate() {
        let spec = validate(entry).map_err(|m| error(format!("device {}{m}", i + 1)))?;
        let names = std::iter::once(&spec.name).chain(&spec.aliases);
        if let Some(taken) = names
            .clone()
            .find(|n| devices.iter().any(|d| d.is_named(n)))
        {
            return Err(error(format!(
                "device {} ({}): the name {taken:?} is already another row's",
                i + 1,
                spec.name
            )));
        }
        devices.push(spec);
    }
    Ok(DeviceTable { devices })
}

/// One row's checks; the message follows `device N` (the caller's prefix).
fn validate(entry: DeviceEntry) -> Result<DeviceSpec, String> {
    let name = entry.name.trim().to_string();
    if name.is_empty() || name.chars().count() > 128 || name.chars().any(char::is_control) {
        return Err(": name must be 1-128 printable characters".to_string());
    }
    let with_name = |m: &str| format!(" ({name}): {m}");
    if entry
        .aliases
        .iter()
        .any(|a| a.trim().is_empty() || a.chars().any(char::is_control))
    {
        return Err(with_name("aliases must be non-empty printable names"));
    }
    if entry.sms == Some(0) || entry.memory_gib == Some(0) {
        return Err(with_name("sms and memory_gib must be positive when given"));
    }
    let positive = |v: f64| v.is_finite() && v > 0.0;
    if !positive(entry.hbm_tb_per_s) {
        return Err(with_name("hbm_tb_per_s must be a positive number"));
    }
    if let Some((dtype, _)) = entry.peak_tflops.iter().find(|(_, v)| !positive(**v)) {
        return Err(with_name(&format!(
            "peak_tflops.{} must be a positive number",
            dtype.label()
        )));
    }
    if entry.peak_tflops.is_empty() {
        return Err(with_name("peak_tflops needs at least one data type"));
    }
    if !entry.citation.contains("https://") {
        return Err(with_name(
            "citation must name the vendor document (its https:// URL, title, table)",
        ));
    }
    if let Some(checked) = &entry.checked {
        if !CHECK_VERDICTS.iter().any(|v| checked.starts_with(v)) {
            return Err(with_name(&format!(
                "checked must start with one of {}",
                CHECK_VERDICTS.join(" ")
            )));
        }
    }
    Ok(DeviceSpec {
        name,
        aliases: entry.aliases.iter().map(|a| a.trim().to_string()).collect(),
        sms: entry.sms,
        memory_bytes: entry.memory_gib.map(|g| u64::from(g) << 30),
        peak_tflops: entry.peak_tflops,
        hbm_tb_per_s: entry.hbm_tb_per_s,
        citation: entry.citation,
        checked: entry.checked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin() -> DeviceTable {
        parse_devices(BUILTIN_DEVICES, Path::new("devices.toml")).unwrap()
    }

    const GIB: u64 = 1 << 30;

    #[test]
    fn every_builtin_row_says_how_its_figures_were_checked() {
        for d in &builtin().devices {
            let checked = d.checked.as_deref().unwrap_or_else(|| panic!("{}", d.name));
            assert!(
                CHECK_VERDICTS.iter().any(|v| checked.starts_with(v)),
                "{}: {checked}",
                d.name
            );
        }
        let bad = ONE_ROW.replace("citation =", "checked = \"looked fine\"\ncitation =");
        let err = parse_devices(&bad, Path::new("d.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("checked must start with"), "{err}");
    }

    #[test]
    fn every_builtin_row_cites_its_vendor_document_and_gives_peaks() {
        let table = builtin();
        assert!(table.devices.len() >= 5, "{}", table.devices.len());
        for d in &table.devices {
            assert!(d.citation.contains("https://"), "{}", d.name);
            assert!(d.peak_tflops.contains_key(&Dtype::Bf16), "{}", d.name);
            assert!(d.hbm_tb_per_s > 0.0, "{}", d.name);
        }
    }

    #[test]
    fn a_trace_name_matches_its_row_whatever_the_case_and_blanks() {
        let table = builtin();
        let facts = DeviceFacts {
            name: "  nvidia b200 ",
            ..DeviceFacts::default()
        };
        let found = table.match_device(&facts).unwrap();
        assert_eq!(found.spec.name, "B200");
        assert_eq!(found.matched_by, MatchedBy::Name);
        let mi300x = DeviceFacts {
            name: "AMD Instinct MI300X",
            ..DeviceFacts::default()
        };
        assert_eq!(table.match_device(&mi300x).unwrap().spec.name, "MI300X");
    }

    #[test]
    fn an_empty_name_falls_back_to_sms_and_memory_when_one_row_fits() {
        // The vLLM graph trace on MI300X: empty name, numSms 304, totalGlobalMem below.
        let facts = DeviceFacts {
            name: "",
            sms: Some(304),
            memory_bytes: Some(206_141_652_992),
        };
        let found = builtin().match_device(&facts).unwrap();
        assert_eq!(found.spec.name, "MI300X");
        assert_eq!(found.matched_by, MatchedBy::SmsAndMemory);
        // The same CUs with 256 GiB is the MI325X, not the MI300X.
        let more_memory = DeviceFacts {
            memory_bytes: Some(255 * GIB),
            ..facts
        };
        assert_eq!(
            builtin().match_device(&more_memory).unwrap().spec.name,
            "MI325X"
        );
    }

    #[test]
    fn sms_and_memory_that_fit_two_rows_leave_the_device_unknown() {
        // The HTA A100 trace: a board name the table does not know, 108 SMs, 39.4 GiB,
        // which the SXM4 and the PCIe A100 40GB both have.
        let facts = DeviceFacts {
            name: "NVIDIA A100-PG509-200",
            sms: Some(108),
            memory_bytes: Some(42_297_524_224),
        };
        let table = builtin();
        let fitting: Vec<&str> = table
            .devices
            .iter()
            .filter(|d| d.fits(108, 42_297_524_224))
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(fitting, ["A100 SXM4 40GB", "A100 PCIe 40GB"]);
        assert_eq!(table.match_device(&facts), None);
        // Nothing fits: unknown too.
        let odd = DeviceFacts {
            name: "",
            sms: Some(58),
            memory_bytes: Some(12_450_922_496),
        };
        assert_eq!(table.match_device(&odd), None);
    }

    #[test]
    fn memory_off_by_more_than_the_tolerance_is_another_part() {
        let table = DeviceTable {
            devices: vec![row("X", Some(100), Some(64))],
        };
        let facts = |gib: f64| DeviceFacts {
            name: "",
            sms: Some(100),
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "test sizes"
            )]
            memory_bytes: Some((gib * GIB as f64) as u64),
        };
        assert!(table.match_device(&facts(60.0)).is_some());
        assert!(table.match_device(&facts(70.0)).is_some());
        assert!(table.match_device(&facts(57.0)).is_none());
        assert!(table.match_device(&facts(71.0)).is_none());
    }

    fn row(name: &str, sms: Option<u32>, memory_gib: Option<u64>) -> DeviceSpec {
        DeviceSpec {
            name: name.to_string(),
            aliases: Vec::new(),
            sms,
            memory_bytes: memory_gib.map(|g| g * GIB),
            peak_tflops: BTreeMap::from([(Dtype::Bf16, 100.0)]),
            hbm_tb_per_s: 1.0,
            citation: "https://example.com".to_string(),
            checked: None,
        }
    }

    const ONE_ROW: &str = "schema = 1\n[[device]]\nname = \"Lab GPU\"\naliases = [\"ACME X1\"]\nsms = 64\nmemory_gib = 32\nhbm_tb_per_s = 1.5\ncitation = \"https://example.com/x1.pdf, X1 datasheet, table 1\"\n[device.peak_tflops]\nbf16 = 200.0\nfp8 = 400.0\n";

    #[test]
    fn a_spec_file_gives_its_one_row() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x1.toml");
        std::fs::write(&file, ONE_ROW).unwrap();
        let spec = load_device_spec(&file).unwrap();
        assert_eq!(spec.name, "Lab GPU");
        assert_eq!(spec.memory_bytes, Some(32 * GIB));
        assert_eq!(spec.peak_tflops.get(&Dtype::Fp8), Some(&400.0));
        assert!(spec.is_named("acme x1"));
    }

    #[test]
    fn bad_rows_and_spec_files_fail_with_one_line_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let two = format!("{ONE_ROW}{}", ONE_ROW.replacen("schema = 1\n", "", 1));
        for (text, expected) in [
            ("schema = 2", "unsupported device table schema 2"),
            ("schema = 1\n", "needs exactly one [[device]] row, found 0"),
            (
                two.as_str(),
                "the name \"Lab GPU\" is already another row's",
            ),
            (
                &ONE_ROW.replace("bf16 = 200.0", "bf17 = 200.0"),
                "invalid device table",
            ),
            (
                &ONE_ROW.replace("bf16 = 200.0", "bf16 = -1.0"),
                "device 1 (Lab GPU): peak_tflops.bf16 must be a positive number",
            ),
            (
                &ONE_ROW.replace("https://example.com/x1.pdf, ", ""),
                "citation must name the vendor document",
            ),
            (&ONE_ROW.replace("sms = 64", "sms = 0"), "must be positive"),
            (
                &ONE_ROW.replace("sms = 64", "weight = 1"),
                "unknown field `weight`",
            ),
        ] {
            let file = dir.path().join("spec.toml");
            std::fs::write(&file, text).unwrap();
            let err = load_device_spec(&file).unwrap_err();
            let line = err.to_string();
            assert!(line.starts_with(&file.display().to_string()), "{line}");
            assert!(line.contains(expected), "{expected}: {line}");
            assert_eq!(line.lines().count(), 1, "{line}");
            assert_eq!(err.exit_code(), crate::exit::INPUT);
        }
        let missing = load_device_spec(&dir.path().join("absent.toml")).unwrap_err();
        assert!(missing.to_string().contains("cannot read"), "{missing}");
    }
}
