#!/usr/bin/env bash
# What flashdraft is for, in one command (the README's first one, after
# scripts/setup.sh): the shipped target continues a prompt with DFlash
# speculative decoding (each step the drafter proposes up to 15 tokens, as
# many as the engine's measured costs and the acceptance so far say pay, and
# the target checks them in one pass), then the same prompt is decoded
# plainly, and the two are compared: target passes, speed (medians of a few
# interleaved runs, so one noisy run cannot decide), what a drafting step
# cost in plain steps, and whether the texts are identical, which greedy
# DFlash promises.
# Usage: bash scripts/demo.sh [PROMPT] [MAX_TOKENS] [RUNS]
#   defaults: 'def is_prime(n):', 256 new tokens, 3 runs of each;
#   FLASHDRAFT_BIN names another build of the binary (default build/flashdraft).
set -euo pipefail
cd "$(dirname "$0")/.."
prompt=${1:-'def is_prime(n):'}
max_tokens=${2:-256}
runs=${3:-3}
bin=${FLASHDRAFT_BIN:-build/flashdraft}
if [[ ! -x $bin ]]; then
  echo "demo: $bin is missing; build it first: bash scripts/setup.sh" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One run; stdout (the text) and stderr (log and summary line) kept apart.
generate() {  # name run [flags...]
  local name=$1 run=$2
  shift 2
  if ! "$bin" generate --model models/target --prompt "$prompt" --temperature 0 --max-tokens "$max_tokens" "$@" \
      >"$tmp/$name.$run.txt" 2>"$tmp/$name.$run.log"; then
    cat "$tmp/$name.$run.log" >&2
    exit 1
  fi
}
# The summary line ("flashdraft: N prompt tokens (prefill ...") of a run, and fields of it.
summary() { grep -h "prompt tokens (prefill" "$tmp/$1.$2.log"; }
field() { summary "$1" 1 | sed -nE "s/$2/\1/p"; }
decode_rate() { summary "$1" "$2" | sed -E 's/.*\(decode ([0-9.]+) tok\/s\).*/\1/'; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "== DFlash: models/target + models/drafter-full, greedy, up to 15 drafts a step, up to $max_tokens new tokens"
for ((i = 1; i <= runs; i++)); do
  generate dflash "$i" --draft-model models/drafter-full
  generate plain "$i"
done
printf '%s' "$prompt"
cat "$tmp/dflash.1.txt"
echo
echo
grep -v "^flashdraft: loaded" "$tmp/dflash.1.log" || true
echo

tokens=$(field plain '.*, ([0-9]+) generated tokens.*')
dflash_tokens=$(field dflash '.*, ([0-9]+) generated tokens.*')
drafting=$(field dflash '.*dflash tau [0-9.]+ \(([0-9]+) drafts.*')
tau=$(field dflash '.*dflash tau ([0-9.]+).*')
mean_k=$(field dflash '.*draft lengths mean ([0-9.]+) .*')
# Decode steps (target passes after the prompt's): those of every draft length, 0 included.
lengths=$(field dflash '.*draft lengths mean [0-9.]+ \(([0-9: ]+)\).*')
steps=$(tr ' ' '\n' <<<"$lengths" | awk -F: '{n += $2} END {print n}')
plain=$(for ((i = 1; i <= runs; i++)); do decode_rate plain "$i"; done | median)
dflash=$(for ((i = 1; i <= runs; i++)); do decode_rate dflash "$i"; done | median)
for v in tokens dflash_tokens drafting tau mean_k steps plain dflash; do
  if [[ -z ${!v} ]]; then
    echo "demo: could not read $v from the summary lines (logs: $tmp)" >&2
    trap - EXIT
    exit 1
  fi
done
same=yes
for ((i = 1; i <= runs; i++)); do
  cmp -s "$tmp/dflash.$i.txt" "$tmp/plain.1.txt" || same=no
  cmp -s "$tmp/plain.$i.txt" "$tmp/plain.1.txt" || same=no
done
# Target passes after the prompt's: one a token plainly, one a step with DFlash.
row() { printf '%-24s %10s %14s %13s\n' "$@"; }
row "" "new tokens" "target passes" "decode tok/s"
row "plain decoding" "$tokens" "$((tokens - 1))" "$plain"
row "DFlash (drafter-full)" "$dflash_tokens" "$steps" "$dflash"
awk -v d="$dflash" -v p="$plain" -v n="$runs" -v t="$dflash_tokens" -v s="$steps" -v g="$drafting" -v k="$mean_k" \
    -v tau="$tau" 'BEGIN {
  printf "DFlash / plain speed: %.2fx (medians of %d interleaved runs of each)\n", d / p, n
  printf "%d of %d DFlash steps drafted (%.1f drafts a step on average); each of those committed\n", g, s, k
  printf "%.2f tokens (tau), and a DFlash step took as long as %.1f plain decode steps on average\n", tau,
         (t / d / s) * p
}'
echo "DFlash text identical to plain decoding's in every run: $same"
echo
echo "DFlash pays when a step costs fewer plain steps than the tokens it commits"
echo "(tau). On a GPU a 16-token verify costs about one decode step (1.05 on an"
echo "H200, README \"GPU figures\"); on a CPU it is compute-bound and costs"
echo "several, so the engine drafts only where its measured costs say it pays"
echo "(--no-adaptive-speculation drafts 15 every step). README \"Speed\" has both."
[[ $same == yes ]]
