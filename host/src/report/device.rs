//! The header's `Device:` line, shared by text and markdown: the analysed GPU, how it was
//! matched, its bandwidth and dense peaks, or that it is not in the device table.

use super::escape::trace;
use super::model::Report;

/// Peaks in this order (the table's), any other key after them.
const DTYPE_ORDER: &[&str] = &["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8"];

/// `Device: MI300X (by name; 304 SMs; 5.3 TB/s; dense peak TFLOP/s: bf16 1307.4, ...)`,
/// or `Device: unknown (...)`; `None` when the report has no device.
pub(super) fn device_line(report: &Report) -> Option<String> {
    let device = report.device.as_ref()?;
    let Some(matched_by) = &device.matched_by else {
        let name = if device.name.trim().is_empty() {
            "no name".to_string()
        } else {
            trace(&device.name)
        };
        return Some(format!(
            "Device: unknown ({name}): not in the device table, no roofline percentages"
        ));
    };
    let mut parts = vec![format!("by {}", matched_by.replace('-', " "))];
    if let Some(sms) = device.sms {
        parts.push(format!("{sms} SMs"));
    }
    if let Some(bandwidth) = device.hbm_tb_per_s {
        parts.push(format!("{bandwidth} TB/s"));
    }
    let mut keys: Vec<&String> = device.peak_tflops.keys().collect();
    keys.sort_by_key(|k| {
        DTYPE_ORDER
            .iter()
            .position(|o| o == k)
            .unwrap_or(usize::MAX)
    });
    let peaks: Vec<String> = keys
        .iter()
        // Keys are the table's data types (validated when loaded), not trace text.
        .map(|k| format!("{k} {}", device.peak_tflops[*k]))
        .collect();
    if !peaks.is_empty() {
        parts.push(format!("dense peak TFLOP/s: {}", peaks.join(", ")));
    }
    Some(format!(
        "Device: {} ({})",
        trace(&device.name),
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::escape::plain;
    use crate::report::sample;
    use crate::report::DeviceReport;

    #[test]
    fn a_matched_device_shows_its_peaks_in_table_order() {
        let mut report = sample::qwen3();
        report.device = Some(DeviceReport {
            name: "MI300X".to_string(),
            matched_by: Some("sms-and-memory".to_string()),
            peak_tflops: [("fp8", 2614.9), ("bf16", 1307.4), ("fp32", 163.4)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            hbm_tb_per_s: Some(5.3),
            sms: Some(304),
            ..DeviceReport::default()
        });
        assert_eq!(
            plain(&device_line(&report).unwrap()),
            "Device: MI300X (by sms and memory; 304 SMs; 5.3 TB/s; dense peak TFLOP/s: fp32 163.4, bf16 1307.4, fp8 2614.9)"
        );
    }

    #[test]
    fn an_unknown_device_says_so_and_no_device_says_nothing() {
        let mut report = sample::qwen3();
        assert_eq!(device_line(&report), None);
        report.device = Some(DeviceReport {
            name: "NVIDIA GeForce RTX 4080 Laptop GPU".to_string(),
            ..DeviceReport::default()
        });
        assert_eq!(
            plain(&device_line(&report).unwrap()),
            "Device: unknown (NVIDIA GeForce RTX 4080 Laptop GPU): not in the device table, no roofline percentages"
        );
    }
}
