//! The device roofs a kernel is measured against, and a row's bound class.
//!
//! `Roof` is the plain value the analysis reads: the SM/CU count (from the trace's
//! `deviceProperties.numSms`, or the device table), the dense peak per dtype class and
//! the HBM bandwidth (from the device table; absent for an unknown device, which leaves
//! every percentage empty).

use crate::analyze::roofline::shapes::DtypeClass;
use crate::catalog::devices::{DeviceMatch, DeviceSpec, Dtype};
use crate::trace::event::DeviceProps;

/// Below this mean launch time a kernel that fills the GPU is latency-bound: a few µs
/// is the order of a launch's fixed cost (block scheduling, prologue, the tail wave),
/// so neither roof can be reached.
pub const LATENCY_NS: i128 = 5_000;

/// What the roofline compares against.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Roof {
    /// SMs (NVIDIA) or CUs (AMD).
    pub sms: Option<u32>,
    /// Dense peak TFLOP/s per dtype class.
    pub peak_tflops: Vec<(DtypeClass, f64)>,
    /// HBM bandwidth in TB/s.
    pub hbm_tb_per_s: Option<f64>,
}

impl Roof {
    /// The compute peak for `class` in FLOP/s; fp32 work without a listed fp32 peak has
    /// none, and a tensor of no float class (an int index) has none.
    pub fn peak_flops(&self, class: Option<DtypeClass>) -> Option<f64> {
        let class = class?;
        self.peak_tflops
            .iter()
            .find(|(c, _)| *c == class)
            .map(|(_, tflops)| tflops * 1e12)
    }

    /// The HBM bandwidth in bytes/s.
    pub fn bandwidth(&self) -> Option<f64> {
        self.hbm_tb_per_s.map(|tb| tb * 1e12)
    }

    /// Whether a launch of this geometry leaves SMs without a block: fewer blocks than
    /// SMs by its grid, or (no grid) Kineto's `blocks per SM` below 1. `None` when the
    /// trace says neither.
    pub fn under_filled(&self, grid: Option<[u32; 3]>, blocks_per_sm: Option<f32>) -> Option<bool> {
        match (grid, self.sms) {
            (Some([x, y, z]), Some(sms)) => {
                Some(u64::from(x) * u64::from(y) * u64::from(z) < u64::from(sms))
            }
            _ => blocks_per_sm.map(|b| b < 1.0),
        }
    }

    /// The time in seconds `flops` and `bytes` take at the roofs: the larger of the two
    /// terms that are known; `None` when neither is.
    pub fn sol_seconds(&self, flops: f64, bytes: f64, class: Option<DtypeClass>) -> Option<f64> {
        let compute = self.peak_flops(class).map(|p| flops / p);
        let memory = self.bandwidth().map(|b| bytes / b);
        match (compute, memory) {
            (Some(c), Some(m)) => Some(c.max(m)),
            // Without its compute peak, a kernel with FLOPs has no roof to compare with.
            (None, Some(m)) if flops == 0.0 || class.is_none() => Some(m),
            _ => None,
        }
    }
}

impl Roof {
    /// The roofs of a device-table row; the trace's SM count wins over the row's (a
    /// partitioned or binned part reports what it has).
    pub fn from_spec(spec: &DeviceSpec, trace_sms: Option<u32>) -> Roof {
        let class = |d: Dtype| match d {
            Dtype::Fp32 => Some(DtypeClass::Fp32),
            Dtype::Bf16 => Some(DtypeClass::Bf16),
            Dtype::Fp16 => Some(DtypeClass::Fp16),
            Dtype::Fp8 => Some(DtypeClass::Fp8),
            Dtype::Fp4 => Some(DtypeClass::Fp4),
            Dtype::Int8 => Some(DtypeClass::Int8),
            Dtype::Fp64 | Dtype::Tf32 => None,
        };
        Roof {
            sms: trace_sms.or(spec.sms),
            peak_tflops: spec
                .peak_tflops
                .iter()
                .filter_map(|(&d, &tflops)| Some((class(d)?, tflops)))
                .collect(),
            hbm_tb_per_s: Some(spec.hbm_tb_per_s),
        }
    }
}

/// The roofs of the analysed GPU: its device-table row (`analyze::device`: the table's
/// match, or `--device` / `--device-spec`), with the trace's SM count where it has one;
/// without a row, the trace's SM count alone (the under-filled class still holds, the
/// percentages stay empty; `analyze::device` notes the unknown device).
pub fn roof_of(device: Option<&DeviceProps>, found: Option<&DeviceMatch>) -> Roof {
    let trace_sms = device.and_then(|d| d.num_sms);
    match found {
        Some(found) => Roof::from_spec(&found.spec, trace_sms),
        None => Roof {
            sms: trace_sms,
            ..Roof::default()
        },
    }
}

/// What one row's sums say about its bound.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct BoundFacts {
    pub total_ns: i128,
    pub launches: u64,
    /// Time of the launches whose geometry is known / of those that under-fill.
    pub geometry_ns: i128,
    pub under_filled_ns: i128,
    /// FLOPs and bytes of the shaped launches, when any.
    pub flops: Option<f64>,
    pub bytes: Option<f64>,
    pub class: Option<DtypeClass>,
}

/// The bound class (`report::model::KernelRoofline::bound`).
pub fn bound(facts: &BoundFacts, roof: &Roof) -> &'static str {
    if facts.geometry_ns > 0 && 2 * facts.under_filled_ns >= facts.total_ns {
        return "under-filled";
    }
    let mean_ns = facts.total_ns / i128::from(facts.launches.max(1));
    if facts.geometry_ns > 0 && mean_ns < LATENCY_NS {
        return "latency";
    }
    let (Some(flops), Some(bytes)) = (facts.flops, facts.bytes) else {
        return "unknown";
    };
    let Some(bandwidth) = roof.bandwidth() else {
        return "unknown";
    };
    if flops == 0.0 {
        return "memory";
    }
    let Some(peak) = roof.peak_flops(facts.class) else {
        return "unknown";
    };
    // Ridge point: the intensity at which both roofs take the same time.
    if bytes == 0.0 || flops / bytes >= peak / bandwidth {
        "compute"
    } else {
        "memory"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mi300x() -> Roof {
        Roof {
            sms: Some(304),
            peak_tflops: vec![(DtypeClass::Bf16, 1307.4)],
            hbm_tb_per_s: Some(5.3),
        }
    }

    #[test]
    fn a_grid_of_fewer_blocks_than_sms_under_fills_and_blocks_per_sm_decides_without_one() {
        let roof = mi300x();
        assert_eq!(roof.under_filled(Some([60, 1, 1]), None), Some(true));
        assert_eq!(roof.under_filled(Some([38, 8, 1]), None), Some(false));
        assert_eq!(roof.under_filled(Some([303, 1, 1]), Some(9.0)), Some(true));
        assert_eq!(roof.under_filled(None, Some(0.38)), Some(true));
        assert_eq!(roof.under_filled(None, Some(6.0)), Some(false));
        assert_eq!(roof.under_filled(None, None), None);
        // Without an SM count the grid alone cannot say; Kineto's ratio still can.
        let bare = Roof::default();
        assert_eq!(bare.under_filled(Some([1, 1, 1]), Some(0.0068)), Some(true));
        assert_eq!(bare.under_filled(Some([1, 1, 1]), None), None);
    }

    #[test]
    fn the_bound_follows_fill_then_duration_then_the_ridge_point() {
        let roof = mi300x();
        let gemm = BoundFacts {
            total_ns: 6_767_000,
            launches: 1,
            geometry_ns: 6_767_000,
            under_filled_ns: 0,
            flops: Some(3.09e12),
            bytes: Some(1.08e9),
            class: Some(DtypeClass::Bf16),
        };
        // Intensity 2861 FLOP/B above the ridge 1307.4e12 / 5.3e12 = 246.7.
        assert_eq!(bound(&gemm, &roof), "compute");
        let norm = BoundFacts {
            flops: Some(2.5e8),
            bytes: Some(2.5e8),
            ..gemm
        };
        assert_eq!(bound(&norm, &roof), "memory");
        let tiny = BoundFacts {
            total_ns: 3_000,
            ..norm
        };
        assert_eq!(bound(&tiny, &roof), "latency");
        let starved = BoundFacts {
            under_filled_ns: 3_000,
            ..tiny
        };
        assert_eq!(bound(&starved, &roof), "under-filled");
        // Under-filled whatever the duration: a long single-block kernel too.
        let long_starved = BoundFacts {
            under_filled_ns: 6_767_000,
            ..gemm
        };
        assert_eq!(bound(&long_starved, &roof), "under-filled");
        // No device peaks, or no shape: unknown.
        assert_eq!(bound(&gemm, &Roof::default()), "unknown");
        let shapeless = BoundFacts {
            flops: None,
            bytes: None,
            ..gemm
        };
        assert_eq!(bound(&shapeless, &roof), "unknown");
    }

    #[test]
    fn the_roof_is_the_device_row_the_report_names_else_the_traces_sm_count_alone() {
        use crate::catalog::devices::{DeviceFacts, MatchedBy};
        use crate::trace::event::DeviceProps;
        let table = crate::catalog::load_devices(None).unwrap();
        let mi300x = DeviceProps {
            name: "AMD Instinct MI300X".to_string(),
            num_sms: Some(304),
            total_global_mem: Some(206_141_652_992),
            ..Default::default()
        };
        let facts = DeviceFacts {
            name: &mi300x.name,
            sms: mi300x.num_sms,
            memory_bytes: mi300x.total_global_mem,
        };
        let matched = table.match_device(&facts).unwrap();
        let roof = roof_of(Some(&mi300x), Some(&matched));
        assert_eq!(roof.sms, Some(304));
        let bf16 = matched.spec.peak_tflops[&Dtype::Bf16];
        assert_eq!(roof.peak_flops(Some(DtypeClass::Bf16)), Some(bf16 * 1e12));
        assert_eq!(roof.bandwidth(), Some(matched.spec.hbm_tb_per_s * 1e12));
        // --device names another row: its peaks, whatever the trace says.
        let h100 = DeviceMatch {
            spec: table.find("H100 SXM").unwrap().clone(),
            matched_by: MatchedBy::Flag,
        };
        let roof = roof_of(Some(&mi300x), Some(&h100));
        let h100_bf16 = h100.spec.peak_tflops[&Dtype::Bf16];
        assert_ne!(h100_bf16, bf16);
        assert_eq!(
            roof.peak_flops(Some(DtypeClass::Bf16)),
            Some(h100_bf16 * 1e12)
        );
        // No row: the SM count alone (under-filled still holds), no roofs.
        let unknown = DeviceProps {
            name: "Imaginary GPU".to_string(),
            num_sms: Some(7),
            ..Default::default()
        };
        let roof = roof_of(Some(&unknown), None);
        assert_eq!((roof.sms, roof.bandwidth()), (Some(7), None));
        assert_eq!(roof.peak_flops(Some(DtypeClass::Bf16)), None);
    }

    #[test]
    fn the_sol_time_is_the_larger_roof_term() {
        let roof = mi300x();
        let t = roof
            .sol_seconds(3.09e12, 1.08e9, Some(DtypeClass::Bf16))
            .unwrap();
        assert!((t - 3.09e12 / 1307.4e12).abs() < 1e-12, "{t}");
        let m = roof.sol_seconds(0.0, 5.3e9, None).unwrap();
        assert!((m - 1e-3).abs() < 1e-12, "{m}");
        assert_eq!(Roof::default().sol_seconds(1.0, 1.0, None), None);
    }
}
