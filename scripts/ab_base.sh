#!/usr/bin/env bash
# A/B of CUDA sources against a committed revision, in one device call and
# with no switches in the code: bench_cycle, bench_attention and bench_step
# are linked a second time (bench_cycle_base, ...) with some sources as
# the revision had them, so the two builds differ only there. (A switch left
# in a kernel moves its timing by itself: on 2026-12-03 a path of the
# attention's reduce that never ran at 8k keys cost that decode call 2%,
# bench/bench_attention_notes.md.) Run the two in alternating order, several
# rounds, in the same call.
#
# Here, in the git checkout:
#   bash scripts/ab_base.sh take REV [FILE...]
#     copies REV's text of each FILE (default: the .cu/.cuh files under src/
#     that differ from REV; .cpp files when named, such as the matmul's
#     tile choice) into ab-base/, untracked, which the device call
#     carries with the tree. Delete ab-base/ when done.
# There, after `source scripts/device_build.sh bench_cycle bench_attention bench_step`:
#   bash scripts/ab_base.sh link [BUILD_DIR]   (default build-gpu)
set -euo pipefail
cd "$(dirname "$0")/.."

take() {
  local rev=$1
  shift
  local files=("$@")
  git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || { echo "ab_base: no revision $rev" >&2; exit 2; }
  if [[ ${#files[@]} -eq 0 ]]; then
    mapfile -t files < <(git diff --name-only "$rev" -- 'src/*.cu' 'src/*.cuh')
  fi
  [[ ${#files[@]} -gt 0 ]] || { echo "ab_base: no CUDA source differs from $rev" >&2; exit 2; }
  rm -rf ab-base
  for f in "${files[@]}"; do
    mkdir -p "ab-base/$(dirname "$f")"
    git show "$rev:$f" >"ab-base/$f"
    echo "ab-base/$f ($rev)"
  done
  echo "$rev" >ab-base/REV
}

link() {
  local B=${1:-build-gpu} root
  root=$(pwd)
  [[ -d ab-base ]] || { echo "ab_base: no ab-base/ (run 'take' in the checkout first)" >&2; exit 2; }
  local cmds
  cmds=$(ninja -C "$B" -t commands bench_cycle bench_attention bench_step)
  rm -rf "$B/ab"
  mkdir -p "$B/ab/objs"
  declare -A swap  # object path in the build -> its base twin
  local f line obj twin
  while IFS= read -r f; do
    f=${f#ab-base/}
    local n=0
    # Every compile of the source (a library's object, bench_attention's own copy).
    while IFS= read -r line; do
      obj=$(grep -oE -- "-o [^ ]+\.o( |$)" <<<"$line" | head -1 | cut -c4- | tr -d ' ')
      twin=ab/objs/${obj//\//_}
      line=${line//"$root/$f"/"$root/ab-base/$f"}
      line=${line/"-o $obj"/"-o $twin"}
      (cd "$B" && eval "$line")
      swap[$obj]=$twin
      n=$((n + 1))
    done < <(grep -E -- "-c $root/$f( |$)" <<<"$cmds" || true)
    [[ $n -gt 0 ]] || echo "ab_base: $f is not compiled into bench_cycle, bench_attention or bench_step; skipped" >&2
  done < <(find ab-base -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' | sort)
  # Static libraries holding a swapped object get a copy with the twin as that member.
  declare -A libs
  for obj in "${!swap[@]}"; do
    if [[ $obj =~ ^(.*)/CMakeFiles/([^/]+)\.dir/ ]]; then
      local lib="${BASH_REMATCH[1]}/lib${BASH_REMATCH[2]}.a"
      [[ -f $B/$lib ]] || continue
      local copy=ab/${lib//\//_}
      [[ -n ${libs[$lib]:-} ]] || cp "$B/$lib" "$B/$copy"
      libs[$lib]=$copy
      mkdir -p "$B/ab/member"
      cp "$B/${swap[$obj]}" "$B/ab/member/$(basename "$obj")"
      (cd "$B" && ar r "$copy" "ab/member/$(basename "$obj")" && rm "ab/member/$(basename "$obj")")
    fi
  done
  local t
  for t in bench_cycle bench_attention bench_step; do
    line=$(grep -E -- "-o bench/$t( |$)" <<<"$cmds" | tail -1)
    for obj in "${!swap[@]}"; do line=${line//" $obj "/" ${swap[$obj]} "}; done
    for lib in "${!libs[@]}"; do line=${line//"$lib"/"${libs[$lib]}"}; done
    line=${line/"-o bench/$t"/"-o bench/${t}_base"}
    (cd "$B" && eval "$line")
    echo "$B/bench/${t}_base: $(cat ab-base/REV 2>/dev/null || echo '?')'s $(find ab-base -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' | wc -l) source(s)"
  done
}

case ${1:-} in
  take) shift; take "$@" ;;
  link) shift; link "$@" ;;
  *) echo "usage: bash scripts/ab_base.sh take REV [FILE...] | link [BUILD_DIR]" >&2; exit 2 ;;
esac
