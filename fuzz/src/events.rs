//! Structure-aware trace events: every field of the shapes Kineto, legacy Kineto, other
//! tools and Python's json writer produce, and wrong ones, rendered as JSON text (with
//! Python's `NaN`/`Infinity` where chosen).

use std::fmt::Write;

use arbitrary::Arbitrary;

#[derive(Arbitrary, Debug)]
pub struct Doc {
    pub bare_list: bool,
    pub events: Vec<Event>,
    /// Top-level keys besides `traceEvents`, before or after it.
    pub extra_first: Option<Value>,
    pub extra_last: Option<Value>,
}

#[derive(Arbitrary, Debug)]
pub struct Event {
    pub ph: Option<Str>,
    pub cat: Option<Str>,
    pub name: Option<Str>,
    pub ts: Option<Value>,
    pub dur: Option<Value>,
    pub pid: Option<Value>,
    pub tid: Option<Value>,
    pub args: Option<Args>,
    /// Render something other than an object.
    pub not_an_object: Option<Value>,
}

#[derive(Arbitrary, Debug)]
pub struct Args {
    pub correlation: Option<Value>,
    pub external_id: Option<Value>,
    pub legacy_external_id: Option<Value>,
    pub stream: Option<Value>,
    pub device: Option<Value>,
    pub name: Option<Value>,
    pub other: Option<Value>,
}

/// Strings from the vocabulary of real traces, or anything.
#[derive(Arbitrary, Debug)]
pub enum Str {
    Known(u8),
    Any(String),
}

const WORDS: &[&str] = &[
    "X",
    "M",
    "i",
    "s",
    "f",
    "kernel",
    "Kernel",
    "gpu_memcpy",
    "Memcpy",
    "gpu_memset",
    "cuda_runtime",
    "cuda_driver",
    "Runtime",
    "cpu_op",
    "Operator",
    "python_function",
    "user_annotation",
    "gpu_user_annotation",
    "ac2g",
    "process_name",
    "thread_name",
    "cudaLaunchKernel",
    "cudaGraphLaunch",
    "hipGraphLaunch",
    "cudaMemcpyAsync",
    "void gemm_kernel<float>(float*, int)",
    "_ZN7ck_tile6kentryINS_13FmhaFwdKernelEEEvT_",
    "sglang/srt/models/qwen3.py(120): forward",
    "nn.Module: Qwen3DecoderLayer_0",
    "decode",
    "prefill",
    "mixed",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
    "",
];

#[derive(Arbitrary, Debug)]
pub enum Value {
    Int(i64),
    Small(u16),
    Float(f64),
    /// `digits.fraction` written as text.
    Decimal(u32, u16),
    NumericString(u32),
    Text(Str),
    Bool(bool),
    Null,
    NaN,
    Infinity,
    NegInfinity,
    Array(Vec<Value>),
    Object(Vec<(Str, Value)>),
}

fn str_text(s: &Str) -> String {
    match s {
        Str::Known(i) => WORDS[*i as usize % WORDS.len()].to_string(),
        Str::Any(s) => s.clone(),
    }
}

fn write_str(out: &mut String, s: &Str) {
    out.push_str(&serde_json::to_string(&str_text(s)).expect("a string serialises"));
}

fn write_value(out: &mut String, v: &Value, depth: usize) {
    match v {
        Value::Int(i) => write!(out, "{i}").unwrap(),
        Value::Small(i) => write!(out, "{i}").unwrap(),
        Value::Float(f) if f.is_finite() => write!(out, "{f:?}").unwrap(),
        Value::Float(_) => out.push_str("NaN"),
        Value::Decimal(a, b) => write!(out, "{a}.{b}").unwrap(),
        Value::NumericString(a) => write!(out, "\"{a}\"").unwrap(),
        Value::Text(s) => write_str(out, s),
        Value::Bool(b) => write!(out, "{b}").unwrap(),
        Value::Null => out.push_str("null"),
        Value::NaN => out.push_str("NaN"),
        Value::Infinity => out.push_str("Infinity"),
        Value::NegInfinity => out.push_str("-Infinity"),
        Value::Array(items) if depth < 8 => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, depth + 1);
            }
            out.push(']');
        }
        Value::Object(fields) if depth < 8 => {
            out.push('{');
            for (i, (k, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, k);
                out.push(':');
                write_value(out, item, depth + 1);
            }
            out.push('}');
        }
        _ => out.push('0'),
    }
}

fn write_field(out: &mut String, first: &mut bool, key: &str, value: impl FnOnce(&mut String)) {
    if !*first {
        out.push(',');
    }
    *first = false;
    write!(out, "\"{key}\":").unwrap();
    value(out);
}

fn write_event(out: &mut String, e: &Event) {
    if let Some(v) = &e.not_an_object {
        write_value(out, v, 0);
        return;
    }
    out.push('{');
    let mut first = true;
    if let Some(s) = &e.ph {
        write_field(out, &mut first, "ph", |o| write_str(o, s));
    }
    if let Some(s) = &e.cat {
        write_field(out, &mut first, "cat", |o| write_str(o, s));
    }
    if let Some(s) = &e.name {
        write_field(out, &mut first, "name", |o| write_str(o, s));
    }
    for (key, v) in [
        ("ts", &e.ts),
        ("dur", &e.dur),
        ("pid", &e.pid),
        ("tid", &e.tid),
    ] {
        if let Some(v) = v {
            write_field(out, &mut first, key, |o| write_value(o, v, 0));
        }
    }
    if let Some(a) = &e.args {
        write_field(out, &mut first, "args", |o| {
            o.push('{');
            let mut first = true;
            for (key, v) in [
                ("correlation", &a.correlation),
                ("External id", &a.external_id),
                ("external id", &a.legacy_external_id),
                ("stream", &a.stream),
                ("device", &a.device),
                ("name", &a.name),
                ("other", &a.other),
            ] {
                if let Some(v) = v {
                    write_field(o, &mut first, key, |o| write_value(o, v, 0));
                }
            }
            o.push('}');
        });
    }
    out.push('}');
}

/// The document as JSON text.
pub fn render(doc: &Doc) -> String {
    let mut events = String::from("[");
    for (i, e) in doc.events.iter().enumerate() {
        if i > 0 {
            events.push(',');
        }
        write_event(&mut events, e);
    }
    events.push(']');
    if doc.bare_list {
        return events;
    }
    let mut out = String::from("{");
    if let Some(v) = &doc.extra_first {
        out.push_str("\"deviceProperties\":");
        write_value(&mut out, v, 0);
        out.push(',');
    }
    out.push_str("\"traceEvents\":");
    out.push_str(&events);
    if let Some(v) = &doc.extra_last {
        out.push_str(",\"distributedInfo\":");
        write_value(&mut out, v, 0);
    }
    out.push('}');
    out
}

/// Kernel and frame names from the vocabulary, for exercising loaded rules.
pub fn sample_names() -> &'static [&'static str] {
    WORDS
}
