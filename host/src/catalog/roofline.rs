//! `catalog/roofline.toml`: which CPU op's launches use which FLOPs/bytes formula, and
//! which positional argument of its `Input Dims` is which tensor. Plain data; the
//! formulas and the shape reading live in `analyze/roofline/`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::one_line;
use crate::error::TriageError;

pub const ROOFLINE_FILE: &str = "roofline.toml";

pub const BUILTIN_ROOFLINE: &str = include_str!("../../../catalog/roofline.toml");

/// The formula a row names (`formula = "..."`), with the arguments it reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpFormula {
    /// `C = A · B (+ bias)`; `b_nk`: B is `[N, K]` (a linear layer's weight).
    Gemm {
        a: usize,
        b: usize,
        b_nk: bool,
        bias: Option<usize>,
        scales: Vec<usize>,
        out_bytes: Option<u64>,
        /// The argument whose `Concrete Inputs` value is the output's c10 ScalarType
        /// (`_scaled_mm`'s `out_dtype`); where recorded it wins over `out_bytes`.
        out_dtype: Option<usize>,
    },
    /// `C[B] = A[B] · B[B]`.
    Bmm {
        a: usize,
        b: usize,
    },
    /// Grouped MoE GEMMs: hidden `[T, H]`, w1 `[E, 2I, H]`, w2 `[E, H, I]`, top-k `[T, k]`.
    Moe {
        hidden: usize,
        w1: usize,
        w2: usize,
        topk: usize,
    },
    /// Paged/varlen attention: q `[T, Hq, d_qk]`, k `[.., Hkv, d_qk]`, v `[.., Hkv, d_v]`.
    Attention {
        q: usize,
        k: usize,
        v: usize,
    },
    RmsNorm {
        add: bool,
        in_place: bool,
    },
    Rope {
        tensors: Vec<usize>,
    },
    KvCacheWrite {
        tensors: Vec<usize>,
        cache: usize,
    },
    AllReduce {
        buffer: usize,
    },
    Elementwise {
        flops_per_elem: u64,
    },
}

impl OpFormula {
    /// The name the catalog spells it with.
    pub fn name(&self) -> &'static str {
        match self {
            OpFormula::Gemm { .. } => "gemm",
            OpFormula::Bmm { .. } => "bmm",
            OpFormula::Moe { .. } => "moe",
            OpFormula::Attention { .. } => "attention",
            OpFormula::RmsNorm { .. } => "rmsnorm",
            OpFormula::Rope { .. } => "rope",
            OpFormula::KvCacheWrite { .. } => "kv_cache_write",
            OpFormula::AllReduce { .. } => "all_reduce",
            OpFormula::Elementwise { .. } => "elementwise",
        }
    }
}

/// One row: the CPU ops it covers and their formula.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpRow {
    pub id: String,
    pub cpu_ops: Vec<String>,
    pub formula: OpFormula,
}

/// Every row of the file, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RooflineOps {
    pub rows: Vec<OpRow>,
}

impl RooflineOps {
    /// The row covering the CPU op named `cpu_op`, if any (the first in file order).
    pub fn for_cpu_op(&self, cpu_op: &str) -> Option<&OpRow> {
        self.rows
            .iter()
            .find(|row| row.cpu_ops.iter().any(|name| name == cpu_op))
    }
}

/// `dir`'s `roofline.toml` when it has one, else the built-in file.
pub fn load_roofline_ops(dir: Option<&Path>) -> Result<RooflineOps, TriageError> {
    if let Some(dir) = dir {
        let path = dir.join(ROOFLINE_FILE);
        if path.exists() {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| TriageError::input(&path, format!("cannot read: {e}")))?;
            return parse_roofline_ops(&text, &path);
        }
    }
    parse_roofline_ops(
        BUILTIN_ROOFLINE,
        Path::new("built-in catalog/roofline.toml"),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RooflineFile {
    schema: u32,
    #[serde(default)]
    op: Vec<OpEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpEntry {
    id: String,
    cpu_ops: Vec<String>,
    formula: String,
    checked_against: Vec<String>,
    a: Option<usize>,
    b: Option<usize>,
    b_layout: Option<String>,
    bias: Option<usize>,
    #[serde(default)]
    scales: Vec<usize>,
    out_bytes: Option<u64>,
    out_dtype: Option<usize>,
    #[serde(default)]
    args: Vec<usize>,
    cache: Option<usize>,
    #[serde(default)]
    add: bool,
    #[serde(default)]
    in_place: bool,
    flops_per_elem: Option<u64>,
}

/// Parses and validates the rows; `path` only names the source in errors.
pub fn parse_roofline_ops(text: &str, path: &Path) -> Result<RooflineOps, TriageError> {
    let error = |message: String| TriageError::input(PathBuf::from(path), message);
    let file: RooflineFile = toml::from_str(text).map_err(|e| {
        error(format!(
            "invalid roofline catalog: {}",
            one_line(&e.to_string())
        ))
    })?;
    if file.schema != 1 {
        return Err(error(format!(
            "unsupported roofline catalog schema {} (this build reads 1)",
            file.schema
        )));
    }
    let mut rows: Vec<OpRow> = Vec::new();
    for (i, entry) in file.op.into_iter().enumerate() {
        let row = i + 1;
        let at = |what: &str| format!("op {row} ({}): {what}", entry.id);
        if entry.id.is_empty() || entry.id.chars().count() > 128 {
            return Err(error(format!("op {row}: id must be 1-128 characters")));
        }
        if rows.iter().any(|r| r.id == entry.id) {
            return Err(error(format!("op {row}: duplicate id {}", entry.id)));
        }
        if entry.cpu_ops.is_empty() || entry.cpu_ops.iter().any(|c| c.trim().is_empty()) {
            return Err(error(at("cpu_ops must name at least one CPU op")));
        }
        if let Some(name) = entry
            .cpu_ops
            .iter()
            .find(|name| rows.iter().any(|r| r.cpu_ops.contains(name)))
        {
            return Err(error(at(&format!(
                "CPU op {name} is already in another row"
            ))));
        }
        if entry.checked_against.is_empty() || entry.checked_against.iter().any(|c| c.is_empty()) {
            return Err(error(at(
                "checked_against must cite where the argument order was checked",
            )));
        }
        let formula = formula_of(&entry).map_err(|why| error(at(&why)))?;
        rows.push(OpRow {
            id: entry.id,
            cpu_ops: entry.cpu_ops,
            formula,
        });
    }
    Ok(RooflineOps { rows })
}

/// The row's formula with exactly the fields it needs; any other field is an error, so a
/// row cannot carry a setting that silently does nothing.
fn formula_of(e: &OpEntry) -> Result<OpFormula, String> {
    let given: Vec<(&str, bool)> = vec![
        ("a", e.a.is_some()),
        ("b", e.b.is_some()),
        ("b_layout", e.b_layout.is_some()),
        ("bias", e.bias.is_some()),
        ("scales", !e.scales.is_empty()),
        ("out_bytes", e.out_bytes.is_some()),
        ("out_dtype", e.out_dtype.is_some()),
        ("args", !e.args.is_empty()),
        ("cache", e.cache.is_some()),
        ("add", e.add),
        ("in_place", e.in_place),
        ("flops_per_elem", e.flops_per_elem.is_some()),
    ];
    let allowed: &[&str] = match e.formula.as_str() {
        "gemm" => &[
            "a",
            "b",
            "b_layout",
            "bias",
            "scales",
            "out_bytes",
            "out_dtype",
        ],
        "bmm" => &["a", "b"],
        "moe" | "attention" | "rope" | "all_reduce" => &["args"],
        "kv_cache_write" => &["args", "cache"],
        "rmsnorm" => &["add", "in_place"],
        "elementwise" => &["flops_per_elem"],
        other => {
            return Err(format!(
                "unknown formula {other} (gemm, bmm, moe, attention, rmsnorm, rope, \
                 kv_cache_write, all_reduce, elementwise)"
            ))
        }
    };
    if let Some((field, _)) = given
        .iter()
        .find(|(field, set)| *set && !allowed.contains(field))
    {
        return Err(format!("{field} does not apply to formula {}", e.formula));
    }
    let need = |value: Option<usize>, field: &str| {
        value.ok_or_else(|| format!("formula {} needs {field}", e.formula))
    };
    let args = |n: usize| {
        if e.args.len() == n {
            Ok(e.args.clone())
        } else {
            Err(format!(
                "formula {} needs args with {n} positions, got {}",
                e.formula,
                e.args.len()
            ))
        }
    };
    Ok(match e.formula.as_str() {
        "gemm" => OpFormula::Gemm {
            a: need(e.a, "a")?,
            b: need(e.b, "b")?,
            b_nk: match e.b_layout.as_deref() {
                Some("kn") => false,
                Some("nk") => true,
                _ => return Err("formula gemm needs b_layout \"kn\" or \"nk\"".to_string()),
            },
            bias: e.bias,
            scales: e.scales.clone(),
            out_bytes: e.out_bytes,
            out_dtype: e.out_dtype,
        },
        "bmm" => OpFormula::Bmm {
            a: need(e.a, "a")?,
            b: need(e.b, "b")?,
        },
        "moe" => {
            let a = args(4)?;
            OpFormula::Moe {
                hidden: a[0],
                w1: a[1],
                w2: a[2],
                topk: a[3],
            }
        }
        "attention" => {
            let a = args(3)?;
            OpFormula::Attention {
                q: a[0],
                k: a[1],
                v: a[2],
            }
        }
        "rmsnorm" => OpFormula::RmsNorm {
            add: e.add,
            in_place: e.in_place,
        },
        "rope" => {
            if e.args.is_empty() {
                return Err("formula rope needs args".to_string());
            }
            OpFormula::Rope {
                tensors: e.args.clone(),
            }
        }
        "kv_cache_write" => {
            if e.args.is_empty() {
                return Err("formula kv_cache_write needs args".to_string());
            }
            OpFormula::KvCacheWrite {
                tensors: e.args.clone(),
                cache: need(e.cache, "cache")?,
            }
        }
        "all_reduce" => OpFormula::AllReduce {
            buffer: args(1)?[0],
        },
        _ => OpFormula::Elementwise {
            flops_per_elem: e.flops_per_elem.unwrap_or(1),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin() -> RooflineOps {
        parse_roofline_ops(BUILTIN_ROOFLINE, Path::new("roofline.toml")).unwrap()
    }

    #[test]
    fn the_builtin_rows_load_and_every_row_cites_its_source() {
        let ops = builtin();
        assert!(ops.rows.len() >= 15, "{}", ops.rows.len());
        let mm = ops.for_cpu_op("aten::mm").unwrap();
        assert_eq!(
            mm.formula,
            OpFormula::Gemm {
                a: 0,
                b: 1,
                b_nk: false,
                bias: None,
                scales: Vec::new(),
                out_bytes: None,
                out_dtype: None,
            }
        );
        assert_eq!(
            ops.for_cpu_op("aiter::mha_batch_prefill").unwrap().formula,
            OpFormula::Attention { q: 0, k: 1, v: 2 }
        );
        assert!(ops.for_cpu_op("aten::mm_").is_none());
        // Every formula kind is used by some row.
        for name in [
            "gemm",
            "bmm",
            "moe",
            "attention",
            "rmsnorm",
            "rope",
            "kv_cache_write",
            "all_reduce",
            "elementwise",
        ] {
            assert!(ops.rows.iter().any(|r| r.formula.name() == name), "{name}");
        }
    }

    #[test]
    fn rows_are_validated_with_one_line_naming_the_file_and_row() {
        let path = Path::new("/c/roofline.toml");
        let row = |body: &str| {
            format!("schema = 1\n[[op]]\nid = \"x\"\ncpu_ops = [\"aten::mm\"]\nchecked_against = [\"here\"]\n{body}")
        };
        for (text, expected) in [
            ("schema = 2".to_string(), "unsupported roofline catalog schema 2"),
            ("schema = 1\nweight = 1".to_string(), "unknown field `weight`"),
            (row("formula = \"fft\""), "op 1 (x): unknown formula fft"),
            (
                row("formula = \"gemm\"\na = 0\nb = 1"),
                "formula gemm needs b_layout",
            ),
            (
                row("formula = \"gemm\"\na = 0\nb = 1\nb_layout = \"kn\"\nadd = true"),
                "add does not apply to formula gemm",
            ),
            (
                row("formula = \"attention\"\nargs = [0, 1]"),
                "formula attention needs args with 3 positions, got 2",
            ),
            (
                "schema = 1\n[[op]]\nid = \"x\"\ncpu_ops = [\"a\"]\nformula = \"rmsnorm\"\nchecked_against = []".to_string(),
                "checked_against must cite",
            ),
            (
                format!("{}\n[[op]]\nid = \"y\"\ncpu_ops = [\"aten::mm\"]\nformula = \"rmsnorm\"\nchecked_against = [\"h\"]", row("formula = \"rmsnorm\"")),
                "op 2 (y): CPU op aten::mm is already in another row",
            ),
        ] {
            let err = parse_roofline_ops(&text, path).unwrap_err().to_string();
            assert!(err.starts_with("/c/roofline.toml"), "{err}");
            assert!(err.contains(expected), "{expected}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }
}
