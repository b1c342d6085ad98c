//! `deviceProperties`: the facts of each GPU a device table is matched by (name, SM/CU
//! count, memory, compute capability), from the list Kineto writes or the Python repr
//! string TraceLens rewrites it as.
//!
//! Every fact is optional: a value of an unexpected type loses that fact only, so the
//! names (which `device_names` has always kept) survive a bad `numSms`.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::build::{repr_strings, repr_u64};
use crate::trace::event::DeviceProps;

/// The top-level `deviceProperties` value, in any of the forms seen.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum DeviceProperties {
    List(Vec<DeviceProperty>),
    /// TraceLens rewrites the list as a Python repr string.
    Repr(String),
    Other(IgnoredAny),
}

/// One entry of the list; Kineto's camelCase keys.
#[derive(Deserialize)]
pub(super) struct DeviceProperty {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    id: Fact,
    #[serde(default, rename = "numSms")]
    num_sms: Fact,
    #[serde(default, rename = "totalGlobalMem")]
    total_global_mem: Fact,
    #[serde(default, rename = "computeMajor")]
    compute_major: Fact,
    #[serde(default, rename = "computeMinor")]
    compute_minor: Fact,
}

impl DeviceProperties {
    /// The devices, in order (none for a value of another shape).
    pub(super) fn devices(self) -> Vec<DeviceProps> {
        match self {
            DeviceProperties::List(list) => list
                .into_iter()
                .map(|d| DeviceProps {
                    id: d.id.0.and_then(|v| i64::try_from(v).ok()),
                    name: d.name.unwrap_or_default(),
                    num_sms: d.num_sms.u32(),
                    total_global_mem: d.total_global_mem.0,
                    compute_major: d.compute_major.u32(),
                    compute_minor: d.compute_minor.u32(),
                })
                .collect(),
            DeviceProperties::Repr(text) => repr_devices(&text),
            DeviceProperties::Other(_) => Vec::new(),
        }
    }
}

/// The devices of a Python repr (`[{'id': 0, 'name': 'AMD Instinct MI300X', ...}, ...]`):
/// one per `'name'` key, each read from its stretch of the text up to the next.
fn repr_devices(text: &str) -> Vec<DeviceProps> {
    let names = repr_strings(text, "name");
    // Each device's stretch: from its opening brace to the next device's. Device dicts
    // are flat, so each `{` opens one.
    let starts: Vec<usize> = text.match_indices('{').map(|(i, _)| i).collect();
    if starts.len() != names.len() {
        // Not the flat list of dicts expected: the names only, as before.
        return names
            .into_iter()
            .map(|name| DeviceProps {
                name,
                ..DeviceProps::default()
            })
            .collect();
    }
    let ends = starts.iter().skip(1).copied().chain([text.len()]);
    names
        .into_iter()
        .zip(starts.iter().zip(ends))
        .map(|(name, (&start, end))| {
            let part = &text[start..end];
            let small = |key| repr_u64(part, key).and_then(|v| u32::try_from(v).ok());
            DeviceProps {
                id: repr_u64(part, "id").and_then(|v| i64::try_from(v).ok()),
                name,
                num_sms: small("numSms"),
                total_global_mem: repr_u64(part, "totalGlobalMem"),
                compute_major: small("computeMajor"),
                compute_minor: small("computeMinor"),
            }
        })
        .collect()
}

/// A non-negative integer fact: integers, integral floats and digit strings count;
/// anything else (a negative or fractional number, another type) is absent, never an
/// error, so the rest of the entry is still read.
#[derive(Default, Clone, Copy)]
pub(super) struct Fact(Option<u64>);

impl Fact {
    fn u32(self) -> Option<u32> {
        self.0.and_then(|v| u32::try_from(v).ok())
    }
}

impl<'de> Deserialize<'de> for Fact {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fact;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Fact, E> {
                Ok(Fact(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Fact, E> {
                Ok(Fact(u64::try_from(v).ok()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Fact, E> {
                let integral = v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19;
                Ok(Fact(integral.then_some(v as u64)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Fact, E> {
                Ok(Fact(v.trim().parse().ok()))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Fact, E> {
                Ok(Fact(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Fact, E> {
                Ok(Fact(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Fact, E> {
                Ok(Fact(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Fact, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Fact(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fact, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Fact(None))
            }
        }
        d.deserialize_any(V)
    }
}
