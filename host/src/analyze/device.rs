//! Which GPU the report's kernels ran on, and its row of the device table
//! (`catalog/devices.toml`): the report's `device` and, when no row fits, a note saying
//! so. The roofline divides by the peaks of the same match.
//!
//! Of several devices a trace lists (`deviceProperties`), the one the trace's GPU ops ran
//! on is analysed (`GpuOp.device` of its first GPU op that names a listed device), else
//! the first. `--device NAME` or `--device-spec FILE` replace the table's verdict.

use std::path::PathBuf;

use crate::catalog::devices::{load_device_spec, DeviceFacts, DeviceMatch, DeviceTable, MatchedBy};
use crate::error::{Result, TriageError};
use crate::report::DeviceReport;
use crate::trace::event::{DeviceProps, Trace};

/// What the user asked for: the table's verdict, or a device of their choosing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum DeviceChoice {
    /// Match the trace's `deviceProperties` against the table.
    #[default]
    FromTrace,
    /// `--device NAME`: a row's name or alias.
    Named(String),
    /// `--device-spec FILE`: a file holding one row.
    SpecFile(PathBuf),
}

/// The row `choice` names, checked before any trace is read; `None` for
/// [`DeviceChoice::FromTrace`]. An unknown `--device` name is a usage error listing the
/// table's names; a bad spec file is an input error naming it.
pub(crate) fn chosen_device(
    choice: &DeviceChoice,
    table: &DeviceTable,
) -> Result<Option<DeviceMatch>> {
    match choice {
        DeviceChoice::FromTrace => Ok(None),
        DeviceChoice::Named(name) => {
            let spec = table.find(name).ok_or_else(|| {
                let names: Vec<&str> = table.devices.iter().map(|d| d.name.as_str()).collect();
                TriageError::Usage(format!(
                    "--device {name:?} is not in the device table; its names: {}",
                    names.join(", ")
                ))
            })?;
            Ok(Some(DeviceMatch {
                spec: spec.clone(),
                matched_by: MatchedBy::Flag,
            }))
        }
        DeviceChoice::SpecFile(path) => Ok(Some(DeviceMatch {
            spec: load_device_spec(path)?,
            matched_by: MatchedBy::SpecFile,
        })),
    }
}

/// The device the first trace that lists any ran its GPU ops on: the one its first GPU
/// op with a listed `device` id names (a rank's trace runs on one GPU, so this reads a
/// few ops, not every one), else the first listed.
pub(crate) fn analysed_device(traces: &[Trace]) -> Option<&DeviceProps> {
    let trace = traces.iter().find(|t| !t.meta.devices.is_empty())?;
    let devices = &trace.meta.devices;
    trace
        .gpu_ops
        .iter()
        .find_map(|op| {
            let id = op.device?;
            devices.iter().find(|d| d.id == Some(id))
        })
        .or_else(|| devices.first())
}

/// The row for `device`: the override when given, else the table's match.
pub(crate) fn match_trace_device(
    device: Option<&DeviceProps>,
    table: &DeviceTable,
    chosen: Option<DeviceMatch>,
) -> Option<DeviceMatch> {
    chosen.or_else(|| {
        let device = device?;
        table.match_device(&DeviceFacts {
            name: &device.name,
            sms: device.num_sms,
            memory_bytes: device.total_global_mem,
        })
    })
}

/// The report's `device` and the note for an unknown one. `None` (and no note) when the
/// traces list no device and none was chosen: nothing to say.
pub(crate) fn device_report(
    device: Option<&DeviceProps>,
    found: Option<&DeviceMatch>,
) -> (Option<DeviceReport>, Option<String>) {
    let trace_name = device.map(|d| d.name.clone());
    let memory_bytes = device.and_then(|d| d.total_global_mem);
    let Some(found) = found else {
        let Some(device) = device else {
            return (None, None);
        };
        let report = DeviceReport {
            name: device.name.clone(),
            matched_by: None,
            peak_tflops: Default::default(),
            hbm_tb_per_s: None,
            sms: device.num_sms,
            trace_name,
            memory_bytes,
            citation: None,
        };
        let note = format!(
            "device not in the table: {}; no roofline percentages; pass --device or --device-spec",
            facts_text(device)
        );
        return (Some(report), Some(note));
    };
    let spec = &found.spec;
    let report = DeviceReport {
        name: spec.name.clone(),
        matched_by: Some(found.matched_by.label().to_string()),
        peak_tflops: spec
            .peak_tflops
            .iter()
            .map(|(dtype, v)| (dtype.label().to_string(), *v))
            .collect(),
        hbm_tb_per_s: Some(spec.hbm_tb_per_s),
        // What the GPU really had (a partitioned MI300X shows fewer CUs), else the row's.
        sms: device.and_then(|d| d.num_sms).or(spec.sms),
        trace_name,
        memory_bytes,
        citation: Some(spec.citation.clone()),
    };
    (Some(report), None)
}

/// `"AMD Instinct MI300X" (304 SMs, 192.0 GiB)`, or `(no name)` for an empty name.
fn facts_text(device: &DeviceProps) -> String {
    let name = if device.name.trim().is_empty() {
        "(no name)".to_string()
    } else {
        format!("{:?}", device.name)
    };
    let mut facts = Vec::new();
    if let Some(sms) = device.num_sms {
        facts.push(format!("{sms} SMs"));
    }
    if let Some(bytes) = device.total_global_mem {
        #[expect(clippy::cast_precision_loss, reason = "shown to one decimal")]
        let gib = bytes as f64 / f64::from(1_u32 << 30);
        facts.push(format!("{gib:.1} GiB"));
    }
    if facts.is_empty() {
        name
    } else {
        format!("{name} ({})", facts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::devices::{parse_devices, BUILTIN_DEVICES};
    use crate::testutil::TraceFixture;
    use crate::trace::event::GpuOp;
    use std::path::Path;

    fn table() -> DeviceTable {
        parse_devices(BUILTIN_DEVICES, Path::new("devices.toml")).unwrap()
    }

    fn props(id: i64, name: &str, sms: u32, gib: u64) -> DeviceProps {
        DeviceProps {
            id: Some(id),
            name: name.to_string(),
            num_sms: Some(sms),
            total_global_mem: Some(gib << 30),
            compute_major: None,
            compute_minor: None,
        }
    }

    #[test]
    fn the_device_the_gpu_ops_ran_on_is_analysed_else_the_first() {
        let mut trace = TraceFixture::new()
            .kernel("k", 0, 10, None, None)
            .kernel("k", 20, 10, None, None)
            .build();
        trace.meta.devices = vec![
            props(0, "NVIDIA B200", 148, 178),
            props(3, "AMD Instinct MI300X", 304, 192),
        ];
        // No op names a device: the first.
        assert_eq!(
            analysed_device(std::slice::from_ref(&trace)).unwrap().id,
            Some(0)
        );
        for i in 0..trace.gpu_ops.len() {
            let op = trace.gpu_ops.at(i);
            trace.gpu_ops.set(
                i,
                GpuOp {
                    device: Some(3),
                    ..op
                },
            );
        }
        let traces = [trace];
        let device = analysed_device(&traces).unwrap();
        assert_eq!(device.id, Some(3));
        let found = match_trace_device(Some(device), &table(), None).unwrap();
        assert_eq!(found.spec.name, "MI300X");
    }

    #[test]
    fn an_unknown_device_gets_null_peaks_and_a_note_naming_it() {
        let device = props(0, "NVIDIA GeForce RTX 4080 Laptop GPU", 58, 12);
        let found = match_trace_device(Some(&device), &table(), None);
        assert_eq!(found, None);
        let (report, note) = device_report(Some(&device), found.as_ref());
        let report = report.unwrap();
        assert_eq!(report.matched_by, None);
        assert!(report.peak_tflops.is_empty());
        assert_eq!(report.hbm_tb_per_s, None);
        assert_eq!(report.sms, Some(58));
        let note = note.unwrap();
        assert!(
            note.starts_with("device not in the table: \"NVIDIA GeForce RTX 4080 Laptop GPU\" (58 SMs, 12.0 GiB)"),
            "{note}"
        );
        assert!(note.ends_with("pass --device or --device-spec"), "{note}");
        // No device listed and none chosen: nothing at all.
        assert_eq!(device_report(None, None), (None, None));
    }

    #[test]
    fn the_device_flag_overrides_the_trace_and_an_unknown_name_is_a_usage_error() {
        let table = table();
        let chosen =
            chosen_device(&DeviceChoice::Named("nvidia h100 80gb hbm3".into()), &table).unwrap();
        let device = props(0, "AMD Instinct MI300X", 304, 192);
        let found = match_trace_device(Some(&device), &table, chosen).unwrap();
        assert_eq!(found.spec.name, "H100 SXM");
        assert_eq!(found.matched_by, MatchedBy::Flag);
        let (report, note) = device_report(Some(&device), Some(&found));
        let report = report.unwrap();
        assert_eq!(report.matched_by.as_deref(), Some("flag"));
        assert_eq!(report.peak_tflops.get("bf16"), Some(&989.5));
        // The trace's own CU count: what the kernels could fill.
        assert_eq!(report.sms, Some(304));
        assert_eq!(note, None);
        let err = chosen_device(&DeviceChoice::Named("H900".into()), &table).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit::USAGE);
        assert!(
            err.to_string()
                .contains("\"H900\" is not in the device table"),
            "{err}"
        );
    }

    #[test]
    fn a_spec_file_overrides_the_trace() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lab.toml");
        std::fs::write(
            &file,
            "schema = 1\n[[device]]\nname = \"Lab\"\nhbm_tb_per_s = 2.0\ncitation = \"https://example.com/lab\"\n[device.peak_tflops]\nbf16 = 100.0\n",
        )
        .unwrap();
        let chosen = chosen_device(&DeviceChoice::SpecFile(file), &table()).unwrap();
        let found = match_trace_device(None, &table(), chosen).unwrap();
        assert_eq!(found.matched_by, MatchedBy::SpecFile);
        let (report, _) = device_report(None, Some(&found));
        let report = report.unwrap();
        assert_eq!(report.name, "Lab");
        assert_eq!(report.matched_by.as_deref(), Some("spec-file"));
        assert_eq!(report.sms, None);
    }
}
