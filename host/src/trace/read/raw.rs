//! One event as read: the borrowed fields later steps use (`RawEvent`, `RawArgs`) and the
//! lenient value types that accept what Python's writers put there (`Label` for pids and
//! tids, `Id` for link ids, `IntArg` for streams and devices, `Time` for times).
//!
//! Both parsing tiers produce these: serde through the `Deserialize` impls below, and
//! `scan.rs` directly, which is why the fields are visible to the whole reader.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::trace::event::{Interner, Ns, Sym};

/// The fields of an event later steps use; every other field is skipped unallocated.
#[derive(Deserialize)]
pub(super) struct RawEvent<'a> {
    #[serde(borrow, default)]
    pub(super) name: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub(super) ph: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub(super) cat: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub(super) ts: Option<Time<'a>>,
    #[serde(borrow, default)]
    pub(super) dur: Option<Time<'a>>,
    #[serde(borrow, default)]
    pub(super) pid: Option<Label<'a>>,
    #[serde(borrow, default)]
    pub(super) tid: Option<Label<'a>>,
    #[serde(borrow, default)]
    pub(super) args: Option<RawArgs<'a>>,
}

#[derive(Deserialize, Default)]
pub(super) struct RawArgs<'a> {
    #[serde(rename = "External id", default)]
    pub(super) external_id: Id,
    /// The 2021 layout spells it in lower case.
    #[serde(rename = "external id", default)]
    pub(super) legacy_external_id: Id,
    #[serde(default)]
    pub(super) correlation: Id,
    #[serde(default)]
    pub(super) stream: IntArg,
    #[serde(default)]
    pub(super) cuda_stream: IntArg,
    #[serde(default)]
    pub(super) device: IntArg,
    /// The name of `process_name` / `thread_name` metadata.
    #[serde(borrow, default)]
    pub(super) name: Option<Label<'a>>,
    /// The optional facts, as their JSON text (typed by `optional.rs`, the same for
    /// both tiers; a value of another type than expected is then absent, not an error).
    #[serde(borrow, default, rename = "Input Dims")]
    pub(super) input_dims: Option<RawText<'a>>,
    /// The 2021 layout spells it `Input dims`.
    #[serde(borrow, default, rename = "Input dims")]
    pub(super) legacy_input_dims: Option<RawText<'a>>,
    #[serde(borrow, default, rename = "Input type")]
    pub(super) input_types: Option<RawText<'a>>,
    #[serde(borrow, default, rename = "Concrete Inputs")]
    pub(super) concrete_inputs: Option<RawText<'a>>,
    #[serde(borrow, default)]
    pub(super) kernel: Option<RawText<'a>>,
    #[serde(borrow, default)]
    pub(super) grid: Option<RawText<'a>>,
    #[serde(borrow, default)]
    pub(super) block: Option<RawText<'a>>,
    #[serde(borrow, default, rename = "blocks per SM")]
    pub(super) blocks_per_sm: Option<RawText<'a>>,
    /// A memcpy's or memset's byte count.
    #[serde(borrow, default)]
    pub(super) bytes: Option<RawText<'a>>,
    /// A collective's facts (PyTorch's `ParamCommsUtils` names, on `record_param_comms`
    /// and, in newer PyTorch, copied onto the NCCL kernel): kept only where the op
    /// carries non-empty split sizes (`build.rs`), so an all-to-all-v's per-peer counts.
    #[serde(borrow, default, rename = "In split size")]
    pub(super) in_split: Option<RawText<'a>>,
    #[serde(borrow, default, rename = "Out split size")]
    pub(super) out_split: Option<RawText<'a>>,
    #[serde(borrow, default, rename = "Collective name")]
    pub(super) collective: Option<RawText<'a>>,
    #[serde(borrow, default, rename = "Process Group Name")]
    pub(super) group: Option<RawText<'a>>,
    #[serde(borrow, default, rename = "Process Group Description")]
    pub(super) group_desc: Option<RawText<'a>>,
    #[serde(borrow, default, rename = "Process Group Ranks")]
    pub(super) group_ranks: Option<RawText<'a>>,
    #[serde(borrow, default)]
    pub(super) dtype: Option<RawText<'a>>,
    #[serde(borrow, default, rename = "Rank")]
    pub(super) rank: Option<RawText<'a>>,
    #[serde(borrow, default, rename = "Seq")]
    pub(super) seq: Option<RawText<'a>>,
}

impl RawArgs<'_> {
    /// Whether any collective fact is present: the scan-ahead thread leaves such (rare)
    /// events to the parser rather than carry nine more spans for every event.
    pub(super) fn has_comms(&self) -> bool {
        [
            self.in_split,
            self.out_split,
            self.collective,
            self.group,
            self.group_desc,
            self.group_ranks,
            self.dtype,
            self.rank,
            self.seq,
        ]
        .iter()
        .any(Option::is_some)
    }
}

/// The optional `args` facts, with the name a value past the size limit is counted
/// under (`SkipCounts::oversized_fields`): the JSON key, and the text's field in
/// [`RawArgs`].
pub(super) const OPTIONAL_ARGS: [(&str, &str); 18] = [
    ("Input Dims", "args.Input Dims"),
    ("Input dims", "args.Input dims"),
    ("Input type", "args.Input type"),
    ("Concrete Inputs", "args.Concrete Inputs"),
    ("kernel", "args.kernel"),
    ("grid", "args.grid"),
    ("block", "args.block"),
    ("blocks per SM", "args.blocks per SM"),
    ("bytes", "args.bytes"),
    ("In split size", "args.In split size"),
    ("Out split size", "args.Out split size"),
    ("Collective name", "args.Collective name"),
    ("Process Group Name", "args.Process Group Name"),
    (
        "Process Group Description",
        "args.Process Group Description",
    ),
    ("Process Group Ranks", "args.Process Group Ranks"),
    ("dtype", "args.dtype"),
    ("Rank", "args.Rank"),
    ("Seq", "args.Seq"),
];

/// A value's text as written: a number, or a string with its quotes (`ts`, `dur`), or
/// any JSON value (the optional `args` facts).
#[derive(Clone, Copy)]
pub(super) struct RawText<'a>(pub(super) &'a str);

impl<'de: 'a, 'a> Deserialize<'de> for RawText<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(|raw| RawText(raw.get()))
    }
}

/// A `ts` or `dur`: its text as written (a number, or a string with its quotes), or, where
/// the scanner read plain microseconds, their value in ns (the text and the value turned
/// into it in one pass, as `time::micros_to_ns` would from the text).
#[derive(Clone, Copy)]
pub(super) enum Time<'a> {
    Text(RawText<'a>),
    Ns(Ns),
}

impl<'de: 'a, 'a> Deserialize<'de> for Time<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RawText::deserialize(d).map(Time::Text)
    }
}

/// A string, borrowed from the input unless it had escapes. (serde's own `Cow` impl
/// always allocates inside an `Option`.)
pub(super) struct Text<'a>(pub(super) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A pid, tid or metadata name: a string or a number, kept as the text Python's `str()`
/// would give, so `0` and `"0"` are the same thread.
pub(super) enum Label<'a> {
    Text(Cow<'a, str>),
    Int(i64),
    Float(f64),
}

impl<'de: 'a, 'a> Deserialize<'de> for Label<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Label<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a number")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Label::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Label::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Label::Text(Cow::Owned(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Label::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                match i64::try_from(v) {
                    Ok(v) => Ok(Label::Int(v)),
                    Err(_) => Ok(Label::Float(v as f64)),
                }
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Label::Float(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl Label<'_> {
    /// Interns the label's text without allocating for the common integer case.
    pub(super) fn intern(&self, strings: &mut Interner) -> Sym {
        match self {
            Label::Text(s) => strings.intern(s),
            Label::Int(v) => {
                let mut buf = [0u8; 24];
                strings.intern(format_int(*v, &mut buf))
            }
            // Python prints 1.0 as "1.0"; Rust's Debug does the same.
            Label::Float(v) => strings.intern(&format!("{v:?}")),
        }
    }

    pub(super) fn as_text(&self) -> Option<&str> {
        match self {
            Label::Text(s) => Some(s),
            _ => None,
        }
    }
}

fn format_int(v: i64, buf: &mut [u8; 24]) -> &str {
    let mut n = v.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    // Only ASCII digits and '-' were written.
    std::str::from_utf8(&buf[i..]).unwrap_or("")
}

/// A link id (`correlation`, `External id`): integers, integral floats and decimal-integer
/// strings count; `null`, `""`, `"None"` and anything else mean absent.
#[derive(Default, Clone, Copy)]
pub(super) struct Id(pub(super) Option<u64>);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an id")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
                Ok(Id(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
                Ok(Id(u64::try_from(v).ok()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id, E> {
                let integral = v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19;
                Ok(Id(integral.then_some(v as u64)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
                let digits = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
                Ok(Id(if digits { v.parse().ok() } else { None }))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Id, E> {
                Ok(Id(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Id, E> {
                Ok(Id(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// An integer argument (`stream`, `device`): integers, integral floats and integer
/// strings; `null` means absent.
#[derive(Default, Clone, Copy)]
pub(super) struct IntArg(pub(super) Option<i64>);

impl<'de> Deserialize<'de> for IntArg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = IntArg;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<IntArg, E> {
                Ok(IntArg(i64::try_from(v).ok()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<IntArg, E> {
                Ok(IntArg(Some(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<IntArg, E> {
                let integral = v.is_finite() && v.fract() == 0.0 && v.abs() < 9.2e18;
                Ok(IntArg(integral.then_some(v as i64)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IntArg, E> {
                Ok(IntArg(v.trim().parse().ok()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<IntArg, E> {
                Ok(IntArg(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<IntArg, E> {
                Ok(IntArg(None))
            }
        }
        d.deserialize_any(V)
    }
}
