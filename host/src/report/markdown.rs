//! The default format: the predecessor's report layout (header lines, then the kernel,
//! overlap and fuse tables, `##### <stage>` sub-headings), with its exact
//! table headers, plus the header lines and notes it lacked.

use super::escape::markdown_inline;
use super::view::{view, Align, Block, Table, View};
use super::{Renderer, Report, DEFAULT_MIN_SHARE_PCT};

pub(crate) struct Markdown {
    /// The kernel-table share bar, named in the empty-table row.
    pub min_share_pct: f64,
}

impl Default for Markdown {
    fn default() -> Self {
        Markdown {
            min_share_pct: DEFAULT_MIN_SHARE_PCT,
        }
    }
}

impl Renderer for Markdown {
    fn render(&self, report: &Report) -> String {
        finish(&document(&view(report, self.min_share_pct)))
    }
}

/// A view built elsewhere (the diff's), laid out as this format lays out a report.
pub(super) fn render_view(view: &View) -> String {
    finish(&document(view))
}

fn document(view: &View) -> Vec<String> {
    let mut lines = vec![format!("# {}", view.title)];
    lines.extend(view.header.iter().map(|l| one_line(l)));
    for block in &view.blocks {
        lines.push(String::new());
        lines.extend(block_lines(block));
    }
    if !view.similarity.is_empty() {
        lines.push(String::new());
        lines.push("## Similarity Notes (heuristic, not part of the tables)".to_string());
        lines.extend(view.similarity.iter().map(|n| format!("- {}", one_line(n))));
    }
    if !view.notes.is_empty() {
        lines.push(String::new());
        lines.push("## Notes".to_string());
        lines.extend(view.notes.iter().map(|n| format!("- {}", one_line(n))));
    }
    lines
}

fn block_lines(block: &Block) -> Vec<String> {
    // Section titles are headings, the stages headings below them, so a markdown viewer's
    // outline reads Kernel Table > decode.
    let mut lines = vec![format!("## {}", block.title)];
    if block.sections.is_empty() {
        lines.extend(table_lines(&block.placeholder));
        return lines;
    }
    let headings = block.needs_headings();
    for (i, section) in block.sections.iter().enumerate() {
        if i > 0 {
            lines.push(String::new());
        }
        if headings {
            lines.push(format!("### {}", markdown_inline(&section.label)));
        }
        // A section without rows (an overlap stage with one stream) is only its lines.
        let has_table = !section.table.rows.is_empty();
        if has_table {
            lines.extend(table_lines(&section.table));
        }
        let trailer: Vec<String> = section
            .summary
            .iter()
            .map(|s| one_line(s))
            .chain(section.notes.iter().map(|n| format!("- {}", one_line(n))))
            .collect();
        if !trailer.is_empty() {
            // A blank line ends the table; without it the summary would become a row.
            if has_table {
                lines.push(String::new());
            }
            lines.extend(trailer);
        }
    }
    lines
}

fn table_lines(table: &Table) -> Vec<String> {
    let mut lines = vec![
        pipe_row(table.header.iter().map(|h| h.to_string())),
        pipe_row(table.align.iter().map(|a| match a {
            Align::Left => "---".to_string(),
            Align::Right => "---:".to_string(),
        })),
    ];
    lines.extend(table.rows.iter().map(|row| {
        pipe_row(row.cells.iter().map(|cell| {
            cell.iter()
                .map(|line| markdown_inline(line))
                .collect::<Vec<_>>()
                .join("<br>")
        }))
    }));
    lines
}

fn pipe_row(cells: impl Iterator<Item = String>) -> String {
    format!("| {} |", cells.collect::<Vec<_>>().join(" | "))
}

/// Free text (header values, summaries, notes) kept on one line, its trace text in code
/// spans and the rest escaped ([`markdown_inline`]).
fn one_line(text: &str) -> String {
    let joined = text
        .split(['\n', '\r'])
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    markdown_inline(&joined)
}

/// Trailing whitespace off every line and the end, then exactly one newline.
pub(crate) fn finish(lines: &[String]) -> String {
    let body: Vec<&str> = lines.iter().map(|l| l.trim_end()).collect();
    let mut text = body.join("\n").trim_end().to_string();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::{self, row, site, stage};

    fn render(report: &Report) -> String {
        Markdown::default().render(report)
    }

    fn lines(text: &str) -> Vec<&str> {
        text.lines().collect()
    }

    const KERNEL_HEAD: &str =
        "| Kernel | Category | GPU time | Share | Launches | Python location (site share) | CPU op |";
    const KERNEL_RULE: &str = "| --- | --- | ---: | ---: | ---: | --- | --- |";

    #[test]
    fn whole_small_report_is_exact() {
        let expected = "\
# Triage View
Mode: single-trace
Framework: SGLang
Decided by: python frames under sglang/srt/ (412); annotation step\\[EXTEND bs=4 toks=512]
Input traces: `/p/1761000000.5-TP-0-EXTEND.trace.json.gz`, `/p/1761000000.5-TP-0-DECODE.trace.json.gz`
Model: `Qwen/Qwen3-8B`
Server args: `tp_size=2`, `attention_backend=fa3`, `disable_cuda_graph=false`

## Kernel Table
### extend/prefill
| Kernel | Category | GPU time | Share | Launches | Python location (site share) | CPU op |
| --- | --- | ---: | ---: | ---: | --- | --- |
| `nvjet_tst_256x128_64x4_2x1_v_bz_coopA_TNT` | gemm | 27.45 ms | 38.9% | 216 | `python/sglang/srt/layers/linear.py:1360 forward` (site share 58%)<br>`python/sglang/srt/layers/linear.py:448 forward` (site share 42%) | `aten::mm` |
| `flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>` | norm | 3.74 ms | 5.3% | 144 | `python/sglang/srt/layers/layernorm.py:76 forward_cuda` | `sgl_kernel::fused_add_rmsnorm` |

gemm takes 38.9% of GPU time (1 kernel).

### decode
| Kernel | Category | GPU time | Share | Launches | Python location (site share) | CPU op |
| --- | --- | ---: | ---: | ---: | --- | --- |
| `Memcpy DtoD (Device -> Device)` | memory | 1.62 ms | 12.5% | 180 | unresolved | - |

memory takes 12.5% of GPU time (1 kernel).
- 180 kernels replayed from 1 CUDA graph.

## Overlap Opportunity Table
### extend/prefill
| Priority | Verdict | Kernel | Python scope | Formal signal | Dep risk | Recommendation |
| --- | --- | --- | --- | --- | --- | --- |
| P2 | headroom | `nvjet_tst_256x128_64x4_2x1_v_bz_coopA_TNT` | `python/sglang/srt/layers/linear.py:1360 forward` | 27452.8 us, share 38.9%, excl 100.0% / hid 0.0% | high (previous op on the same stream (gemm, 0.4 us gap): same Python scope family) | check deps |

GPU busy 70.56 ms on 2 streams: 1.20 ms overlapped, 0.04 ms idle
- single-trace mode: hidden and exclusive times are exact

### decode
- one GPU stream (stream 7) ran all 180 GPU ops of this stage: nothing overlaps, so there are no overlap rows

## Fuse Opportunity Table
| Pattern | Confidence | Related GPU time | Share | Evidence kernels | Current kernel Python location | Candidate fused Python path | Rationale |
| --- | --- | ---: | ---: | --- | --- | --- | --- |
| No source-backed fusion pattern matched this trace. | - | - | - | - | - | - | - |

## Notes
- 1 other rank ignored: /p/1761000000.5-TP-1-EXTEND.trace.json.gz
";
        assert_eq!(render(&sample::qwen3()), expected);
    }

    #[test]
    fn single_all_section_has_no_sub_heading() {
        let mut k = row(
            "void act_and_mul_kernel<__nv_bfloat16>",
            "activation",
            500.0,
            2000.0,
            10,
        );
        k.python_locations = vec![site(
            "vllm/model_executor/layers/activation.py:110 forward_cuda",
            100.0,
        )];
        let text = render(&sample::report(vec![stage("all", 2000.0, vec![k])]));
        let lines = lines(&text);
        let at = lines.iter().position(|l| *l == "## Kernel Table").unwrap();
        assert_eq!(lines[at + 1], KERNEL_HEAD);
        assert_eq!(lines[at + 2], KERNEL_RULE);
        assert_eq!(
            lines[at + 3],
            "| `act_and_mul_kernel<__nv_bfloat16>` | activation | 0.50 ms | 25.0% | 10 | `vllm/model_executor/layers/activation.py:110 forward_cuda` | - |"
        );
        assert!(!text.contains("#####"), "{text}");
    }

    #[test]
    fn a_lone_decode_section_keeps_its_heading() {
        let k = row("Memset (Device)", "memory", 10.0, 100.0, 1);
        let text = render(&sample::report(vec![stage("decode", 100.0, vec![k])]));
        assert!(
            text.contains("## Kernel Table\n### decode\n| Kernel |"),
            "{text}"
        );
    }

    #[test]
    fn a_stage_with_no_rows_has_no_section_but_keeps_its_notes() {
        let k = row("Memset (Device)", "memory", 10.0, 100.0, 1);
        let mut empty = stage("extend/prefill", 0.5, vec![]);
        empty.notes = vec!["every row is below the bar".to_string()];
        let text = render(&sample::report(vec![
            empty,
            stage("decode", 100.0, vec![k]),
        ]));
        assert!(!text.contains("### extend/prefill"), "{text}");
        assert!(
            text.ends_with("Notes\n- extend/prefill: every row is below the bar\n"),
            "{text}"
        );
    }

    #[test]
    fn placeholder_names_the_share_bar_in_use() {
        let report = sample::report(vec![stage("all", 0.0, vec![])]);
        let text = render(&report);
        assert!(text.contains(
            "## Kernel Table\n| Kernel | Category | GPU time | Share | Launches | Python location (site share) | CPU op |\n| --- | --- | ---: | ---: | ---: | --- | --- |\n| No kernel rows at or above 1.0% share. | - | - | - | - | - | - |\n"
        ), "{text}");
        let text = Markdown {
            min_share_pct: 0.25,
        }
        .render(&report);
        assert!(
            text.contains("| No kernel rows at or above 0.25% share. | - | - | - | - | - | - |"),
            "{text}"
        );
        let text = Markdown { min_share_pct: 2.0 }.render(&report);
        assert!(
            text.contains("| No kernel rows at or above 2.0% share. |"),
            "{text}"
        );
    }

    #[test]
    fn cells_escape_pipes_and_newlines() {
        let mut k = row(
            "triton_poi_fused_add|mul_0",
            "elementwise",
            300.0,
            1000.0,
            3,
        );
        k.python_locations = vec![
            site("python/sglang/srt/models/qwen3.py:90 forward\nsecond", 75.0),
            site("python/sglang/srt/models/qwen3.py:95 forward", 20.0),
            site("python/sglang/srt/models/qwen3.py:99 forward", 5.0),
        ];
        k.cpu_ops = vec![
            "aten::add|x".to_string(),
            "aten::mul".to_string(),
            "aten::cat".to_string(),
        ];
        let text = render(&sample::report(vec![stage("all", 1000.0, vec![k])]));
        assert!(text.contains(
            "| `triton_poi_fused_add\\|mul_0` | elementwise | 0.30 ms | 30.0% | 3 | `python/sglang/srt/models/qwen3.py:90 forward\\nsecond` (site share 75%)<br>`python/sglang/srt/models/qwen3.py:95 forward` (site share 20%) | `aten::add\\|x`<br>`aten::mul` |"
        ), "{text}");
    }

    #[test]
    fn long_kernel_names_are_shortened_for_display_only() {
        use crate::trace::names::{short_name, SHORT_ARGS_MAX};
        let name = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >";
        let short = short_name(name, SHORT_ARGS_MAX);
        assert!(short.len() < name.len(), "{short}");
        let report = sample::report(vec![stage(
            "all",
            100.0,
            vec![row(name, "memory", 10.0, 100.0, 1)],
        )]);
        let text = render(&report);
        assert!(
            text.contains(&format!(
                "| `{short}` | memory | 0.01 ms | 10.0% | 1 | unresolved | - |"
            )),
            "{text}"
        );
        assert!(!text.contains(name), "{text}");
        assert!(crate::report::json::Json.render(&report).contains(name));
    }

    #[test]
    fn numbers_round_like_the_predecessor() {
        // Python: '%.2f' % 0.125 == '0.12', '%.1f' % 0.25 == '0.2', '%.0f' % 2.5 == '2'.
        let mut k = row("k", "other", 125.0, 1000.0, 1);
        k.share_pct = 0.25;
        k.python_locations = vec![site("a.py:1 f", 97.5), site("b.py:2 g", 2.5)];
        let text = render(&sample::report(vec![stage("all", 1000.0, vec![k])]));
        assert!(text.contains("| `k` | other | 0.12 ms | 0.2% | 1 | `a.py:1 f` (site share 98%)<br>`b.py:2 g` (site share 2%) | - |"), "{text}");
    }

    fn fusion(share_pct: f64, evidence: Vec<(&str, f64)>) -> crate::report::model::FusionRow {
        use crate::report::model::{FusionEvidence, FusionRow};
        FusionRow {
            id: "sglang.fused-add-rmsnorm".to_string(),
            label: "Fused residual add + RMSNorm".to_string(),
            origin: "sglang".to_string(),
            status: "mainline".to_string(),
            pr: None,
            conclusion: "present".to_string(),
            confidence: "Confirmed".to_string(),
            related_gpu_time_us: 10.0 * share_pct,
            share_pct,
            evidence: evidence
                .into_iter()
                .map(|(kernel, share_pct)| FusionEvidence {
                    kernel: kernel.to_string(),
                    gpu_time_us: 10.0 * share_pct,
                    share_pct,
                    part: "fused".to_string(),
                    field: "kernel".to_string(),
                    pattern: "fused add rms norm".to_string(),
                })
                .collect(),
            python_locations: vec![
                "python/sglang/srt/layers/layernorm.py:76 forward_cuda".to_string(),
                "a.py:1 f".to_string(),
                "b.py:2 g".to_string(),
                "c.py:3 h".to_string(),
                "d.py:4 i".to_string(),
            ],
            candidate_paths: vec![
                "python/sglang/srt/layers/layernorm.py".to_string(),
                "x|y.py".to_string(),
            ],
            checked_against: vec![],
            rationale: "The fused path is present in this trace (7.4% related GPU time)."
                .to_string(),
        }
    }

    #[test]
    fn computed_fuse_rows_replace_the_empty_row() {
        let k = row("k", "other", 100.0, 1000.0, 1);
        let mut decode = stage("decode", 1000.0, vec![k]);
        decode.fusions = vec![fusion(
            7.4,
            vec![
                (
                    "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>",
                    7.0,
                ),
                ("small", 0.4),
            ],
        )];
        let text = render(&sample::report(vec![decode]));
        assert!(
            text.contains("## Fuse Opportunity Table\n### decode\n| Pattern |"),
            "{text}"
        );
        // Evidence keeps rows >= 1%; locations are `func @ path:line`, at most 4.
        assert!(text.contains(
            "| Fused residual add + RMSNorm | Confirmed | 0.07 ms | 7.4% | `flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>` (7.0%) | `forward_cuda @ python/sglang/srt/layers/layernorm.py:76`<br>`f @ a.py:1`<br>`g @ b.py:2`<br>`h @ c.py:3` | python/sglang/srt/layers/layernorm.py<br>x\\|y.py | The fused path is present in this trace (7.4% related GPU time). |"
        ), "{text}");
        assert!(!text.contains(super::super::view::FUSE_NO_MATCH), "{text}");
    }

    #[test]
    fn fuse_evidence_falls_back_to_the_first_kernel_and_similarity_is_apart() {
        use crate::report::model::SimilarityNote;
        let mut all = stage("all", 1000.0, vec![row("k", "other", 100.0, 1000.0, 1)]);
        all.fusions = vec![fusion(0.5, vec![("tiny_a", 0.3), ("tiny_b", 0.2)])];
        all.similarity = vec![SimilarityNote {
            level: "medium".to_string(),
            family_id: "vllm.qk-norm-rope".to_string(),
            family: "vLLM fused QK RMSNorm + RoPE".to_string(),
            reason: "2 of 3 parts".to_string(),
        }];
        let text = render(&sample::report(vec![all]));
        assert!(
            text.contains("| 0.01 ms | 0.5% | `tiny_a` (0.3%) |"),
            "{text}"
        );
        assert!(text.contains(
            "Similarity Notes (heuristic, not part of the tables)\n- all: Similarity (medium): vLLM fused QK RMSNorm + RoPE (vllm.qk-norm-rope): 2 of 3 parts\n"
        ), "{text}");
    }

    #[test]
    fn no_line_ends_in_whitespace_and_the_text_ends_in_one_newline() {
        let mut report = sample::qwen3();
        report.notes.push("trailing   ".to_string());
        let text = render(&report);
        assert!(text.lines().all(|l| l == l.trim_end()), "{text}");
        assert!(text.ends_with("- trailing\n"), "{text}");
    }
}
