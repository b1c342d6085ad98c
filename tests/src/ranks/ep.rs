//! Expert-parallel runs: the collectives are NCCL all-to-all-vs in MoE pairs: an even
//! one is a token dispatch whose per-peer split sizes are skewed towards one hot expert
//! rank, the odd one after it the combine, which sends every peer back what the
//! dispatch received from it (its lists are the dispatch's, swapped). Written
//! as PyTorch writes them: a `record_param_comms` CPU op with `Collective name`
//! `all_to_allv`, `In split size` / `Out split size` as strings holding Python lists of
//! element counts per peer, the process group's name, description and ranks, `dtype`,
//! `Rank` and `Seq`, and the same facts copied onto the `ncclDevKernel_SendRecv` kernel
//! (newer PyTorch). One dispatch's `In split size` is garbage (the analysis must skip
//! and count it, and its combine is then unpaired) and one receiver's dispatch `Out
//! split size` entry disagrees with its sender's (the cross-check must find it, and its
//! mirror in the combine, which sends back what the receiver says it got).

use serde_json::{json, Value};

use super::RankRun;

/// The all-to-all kernel (NCCL runs `all_to_all_single` as grouped send/recv).
pub(super) const ALL_TO_ALL_RAW: &str = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";

/// What an EP run injects.
#[derive(Clone, Debug)]
pub struct EpSpec {
    /// Elements per token row (DeepSeek-V3's hidden size).
    pub hidden: u64,
    /// The expert rank every sender sends 4x the tokens to.
    pub hot_rank: u32,
    /// (step, collective, rank) whose op has a malformed `In split size` (a dispatch:
    /// an even collective).
    pub malformed: (usize, usize, u32),
    /// (step, collective, sender, receiver): the receiver's `Out split size` entry for
    /// the sender says one row more than was sent (a dispatch).
    pub mismatch: (usize, usize, u32, u32),
}

/// The process group the all-to-alls run in.
pub const GROUP: &str = "2";
pub const GROUP_DESC: &str = "ep_group";

/// The EP runs `make-fixtures --ranks` writes beside the TP runs.
pub fn ep_runs() -> Vec<RankRun> {
    vec![RankRun {
        name: "ep4-imbalanced",
        ranks: 4,
        steps: 5,
        // Two MoE layers: dispatch, combine, dispatch, combine.
        layers: 4,
        graph_replay: false,
        offsets_ns: vec![400_000, -1_300_000, 2_600_000, -3_900_000],
        lateness: Vec::new(),
        seed: 47,
        start_steps: Vec::new(),
        ep: Some(EpSpec {
            hidden: 7168,
            hot_rank: 2,
            malformed: (2, 2, 3),
            mismatch: (4, 0, 0, 1),
        }),
    }]
}

/// Token rows `from` sends `to` at one layer of one step: 32-64 (a fixed hash of the
/// place, so host and GPU sides agree without sharing a random stream), 4x to the hot
/// rank.
fn rows(run: &RankRun, spec: &EpSpec, step: usize, layer: usize, from: u32, to: u32) -> u64 {
    let mut h = run.seed ^ 0x9E37_79B9_7F4A_7C15;
    for v in [step as u64, layer as u64, from as u64, to as u64] {
        h = (h ^ v).wrapping_mul(0x0100_0000_01B3).rotate_left(29);
    }
    let base = 32 + h % 33;
    if to == spec.hot_rank {
        base * 4
    } else {
        base
    }
}

/// Whether collective `layer` is a combine (the odd one after each dispatch).
fn is_combine(layer: usize) -> bool {
    layer % 2 == 1
}

/// Elements rank `from` sends each peer, as its `In split size` says: a combine sends
/// back what its dispatch's `Out split size` says was received.
fn sent(run: &RankRun, spec: &EpSpec, step: usize, layer: usize, from: u32) -> Vec<u64> {
    if is_combine(layer) {
        return received(run, spec, step, layer - 1, from);
    }
    (0..run.ranks)
        .map(|to| rows(run, spec, step, layer, from, to) * spec.hidden)
        .collect()
}

/// Elements rank `to` receives from each peer, as its `Out split size` says (with the
/// injected disagreement): a combine receives what its dispatch sent.
fn received(run: &RankRun, spec: &EpSpec, step: usize, layer: usize, to: u32) -> Vec<u64> {
    if is_combine(layer) {
        return sent(run, spec, step, layer - 1, to);
    }
    (0..run.ranks)
        .map(|from| {
            let n = rows(run, spec, step, layer, from, to) * spec.hidden;
            if spec.mismatch == (step, layer, from, to) {
                n + spec.hidden
            } else {
                n
            }
        })
        .collect()
}

fn list(counts: &[u64]) -> String {
    let parts: Vec<String> = counts.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// The collective's args on rank `r` (the CPU op's and the kernel's), after a comma.
pub(super) fn comms_args(run: &RankRun, step: usize, layer: usize, r: u32) -> String {
    let Some(spec) = &run.ep else {
        return String::new();
    };
    let sent = sent(run, spec, step, layer, r);
    let received = received(run, spec, step, layer, r);
    let in_split = if spec.malformed == (step, layer, r) {
        format!("[{}, oops, {}]", sent[0], sent[1])
    } else {
        list(&sent)
    };
    let ranks: Vec<u32> = (0..run.ranks).collect();
    let ranks = list(&ranks.iter().map(|&r| r as u64).collect::<Vec<_>>());
    format!(
        ", \"Collective name\": \"all_to_allv\", \"In msg nelems\": {}, \"Out msg nelems\": {}, \"Group size\": {}, \"dtype\": \"BFloat16\", \"In split size\": \"{in_split}\", \"Out split size\": \"{}\", \"Global rank start\": 0, \"Global rank stride\": 1, \"Process Group Name\": \"{GROUP}\", \"Process Group Description\": \"{GROUP_DESC}\", \"Process Group Ranks\": \"{ranks}\", \"Rank\": {r}, \"Seq\": {}",
        sent.iter().sum::<u64>(),
        received.iter().sum::<u64>(),
        run.ranks,
        list(&received),
        step * run.layers + layer + 1,
    )
}

/// A phase's sums over the ops read: per rank the ops and the elements sent and
/// received per peer, per member what the senders sent it.
struct PhaseSums {
    count: Vec<usize>,
    sent_by: Vec<Vec<u64>>,
    received_by: Vec<Vec<u64>>,
}

impl PhaseSums {
    fn new(n: usize) -> Self {
        PhaseSums {
            count: vec![0; n],
            sent_by: vec![vec![0; n]; n],
            received_by: vec![vec![0; n]; n],
        }
    }

    fn add(&mut self, r: usize, sent: &[u64], received: &[u64]) {
        self.count[r] += 1;
        for (p, (s, v)) in sent.iter().zip(received).enumerate() {
            self.sent_by[r][p] += s;
            self.received_by[r][p] += v;
        }
    }

    fn json(&self) -> Value {
        let n = self.count.len();
        json!({
            "ranks": (0..n).map(|r| json!({
                "rank": r,
                "count": self.count[r],
                "sent": self.sent_by[r],
                "received": self.received_by[r],
            })).collect::<Vec<_>>(),
            "member_received": (0..n)
                .map(|p| (0..n).map(|r| self.sent_by[r][p]).sum::<u64>())
                .collect::<Vec<_>>(),
        })
    }
}

/// What a correct EP imbalance section says of `run`, per phase (`dispatch`,
/// `combine`, and `all-to-all` for the combine whose dispatch was skipped): per rank the
/// ops read and the elements sent and received per peer, per member what the group's
/// senders sent it; the skipped op and the two disagreements the cross-check finds (the
/// injected one and its mirror in the combine).
pub(super) fn truth(run: &RankRun) -> Value {
    let Some(spec) = &run.ep else {
        return Value::Null;
    };
    let n = run.ranks as usize;
    let [mut dispatch, mut combine, mut unpaired] = [(); 3].map(|()| PhaseSums::new(n));
    let mut ops_per_collective = Vec::new();
    for step in 0..run.steps {
        for layer in 0..run.layers {
            let mut ops = 0;
            for r in 0..run.ranks {
                if spec.malformed == (step, layer, r) {
                    continue;
                }
                ops += 1;
                let phase = if !is_combine(layer) {
                    &mut dispatch
                } else if spec.malformed == (step, layer - 1, r) {
                    &mut unpaired
                } else {
                    &mut combine
                };
                phase.add(
                    r as usize,
                    &sent(run, spec, step, layer, r),
                    &received(run, spec, step, layer, r),
                );
            }
            ops_per_collective.push(ops);
        }
    }
    let (step, layer, from, to) = spec.mismatch;
    let mismatch_sent = sent(run, spec, step, layer, from)[to as usize];
    let mismatch = |seq: usize, from: u32, to: u32, sent: u64, received: u64| json!({ "seq": seq, "from": from, "to": to, "sent": sent, "received": received });
    let seq = step * run.layers + layer + 1;
    json!({
        "group": GROUP,
        "description": GROUP_DESC,
        "hidden": spec.hidden,
        "hot_rank": spec.hot_rank,
        "unit": "elements (BFloat16)",
        "phases": {
            "dispatch": dispatch.json(),
            "combine": combine.json(),
            "all-to-all": unpaired.json(),
        },
        "skipped_malformed": 1,
        "cross_checked": ops_per_collective.iter().map(|k| k * (k - 1)).sum::<usize>(),
        // In Seq order: the dispatch's, then the combine's (the receiver sends back the
        // row more it says it got).
        "mismatches": [
            mismatch(seq, from, to, mismatch_sent, mismatch_sent + spec.hidden),
            mismatch(seq + 1, to, from, mismatch_sent + spec.hidden, mismatch_sent),
        ],
    })
}
