#!/usr/bin/env bash
# Benchmark: the whole triage (read + link + stage + kernel table + render) on a big
# trace, against `zcat` of the same file, in one run, alternating.
#
#   scripts/bench.sh [SIZE_MB] [RUNS]        (defaults: 200 MB of JSON, 3 runs)
#
# It tiles the real B200 vLLM trace from ../shared/traces to SIZE_MB of JSON (timestamps
# shifted per copy), gzips it, then times `zcat FILE > /dev/null` and
# `llm-triage --framework vllm --input FILE --format json > /dev/null` with
# /usr/bin/time. Prints the median wall time of each, their ratio, the triage's
# throughput in MB/s of uncompressed JSON, and its peak RSS as a fraction of the JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
size_mb=${1:-200}
runs=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release --workspace -q
# bench_read writes big.json and big.json.gz into --keep DIR (and measures the reader alone).
cargo run --release -q -p llm-triage --example bench_read -- --size-mb "$size_mb" --keep "$work" >&2
json="$work/big.json"
gz="$work/big.json.gz"
json_bytes=$(stat -c %s "$json")

timed() { # prints "wall_seconds max_rss_kb" of the command
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null 2> "$work/stderr" || {
        cat "$work/stderr" >&2
        exit 1
    }
    cat "$work/time"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

: > "$work/zcat.txt"
: > "$work/triage.txt"
for _ in $(seq "$runs"); do
    timed zcat "$gz" >> "$work/zcat.txt"
    timed ./target/release/llm-triage --framework vllm --input "$gz" --format json >> "$work/triage.txt"
done
zcat_s=$(cut -d' ' -f1 "$work/zcat.txt" | median)
triage_s=$(cut -d' ' -f1 "$work/triage.txt" | median)
rss_kb=$(cut -d' ' -f2 "$work/triage.txt" | sort -n | tail -1)
awk -v j="$json_bytes" -v z="$zcat_s" -v t="$triage_s" -v r="$rss_kb" -v n="$runs" 'BEGIN {
    printf "JSON size              %.1f MB (gzip input)\n", j / 1e6
    printf "zcat median            %.2f s  (%d runs)\n", z, n
    printf "llm-triage median      %.2f s  (%.0f MB/s of JSON)\n", t, j / 1e6 / t
    printf "triage / zcat          %.2fx\n", t / z
    printf "peak RSS               %.0f MB = %.2fx the JSON size\n", r / 1024, r * 1024 / j
}'
