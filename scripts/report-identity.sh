#!/usr/bin/env bash
# Report identity: the markdown, text and JSON reports (plus stderr and exit code) of every
# shared trace, the 16 generated fixtures and the bundled example, written by the release
# binary of the current tree. A refactor must leave them byte-identical.
#
#   scripts/report-identity.sh snapshot DIR   write every report under DIR
#   scripts/report-identity.sh check DIR      write them again and diff against DIR
#                                             (exit 1 and the diff when they differ)
#
# Fixtures are written to target/identity/fixtures, and the checkout's own path is
# replaced by <repo> in every output, so two checkouts (git worktrees beside each other)
# compare equal. Run from anywhere; paths are relative to the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
dir=${2:-}
if [[ $mode != snapshot && $mode != check ]] || [[ -z $dir ]]; then
    echo "usage: scripts/report-identity.sh snapshot|check DIR" >&2
    exit 2
fi

cargo build --release --workspace --quiet
bin=target/release/llm-triage
fixtures=target/identity/fixtures
rm -rf "$fixtures"
cargo run --release --quiet -p llm-triage-tests --bin make-fixtures -- --matrix "$fixtures" >/dev/null

out=$dir
if [[ $mode == check ]]; then
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

# One case: NAME then the triage arguments; every format, stdout, stderr and exit code.
report() {
    local name=$1
    shift
    for format in markdown text json; do
        local base="$out/$name.$format"
        set +e
        "$bin" "$@" --format "$format" >"$base.out" 2>"$base.err"
        echo $? >"$base.rc"
        set -e
    done
}

for trace in ../shared/traces/*.json*; do
    name=$(basename "$trace")
    report "$name.auto" --input "$trace"
    report "$name.all" --input "$trace" --min-share 0
    report "$name.vllm" --framework vllm --input "$trace" --min-share 0
    report "$name.sglang" --framework sglang --input "$trace"
done
for case in "$fixtures"/case*; do
    report "fixture-$(basename "$case")" --input "$case" --min-share 0
done
report example --input examples/sglang-qwen3
report mapping-formal --framework sglang \
    --mapping-input ../shared/traces/AMD-AGI__TraceLens__sglang_Qwen3-8B_prefilldecode.json.gz \
    --formal-input ../shared/traces/AMD-AGI__TraceLens__sglang_Qwen3-8B_decode.json.gz

# Subcommands whose text a refactor must not change either.
side() {
    local name=$1
    shift
    set +e
    "$bin" "$@" >"$out/$name.out" 2>"$out/$name.err"
    echo $? >"$out/$name.rc"
    set -e
}
side catalog-list catalog list
side catalog-list-json catalog list --format json
side catalog-show catalog show vllm.allreduce-rmsnorm
side catalog-validate catalog validate
side plugins-list plugins list
side help --help

find "$out" -type f -exec sed -i "s#$PWD#<repo>#g" {} +

if [[ $mode == check ]]; then
    if diff -r "$dir" "$out" >"$out.diff"; then
        echo "reports identical: $(find "$out" -name '*.out' | wc -l) outputs"
        rm -f "$out.diff"
    else
        cat "$out.diff"
        rm -f "$out.diff"
        exit 1
    fi
else
    echo "wrote $(find "$out" -name '*.out' | wc -l) outputs to $out"
fi
