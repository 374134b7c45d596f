#!/usr/bin/env bash
# A/B rounds of `tpu run` between two builds, alternated, so that a
# change's effect can be told from a noisy machine's drift: issue 25's
# measurements (banking's CPU a transaction against its bench in the
# same process, --banking-peer; tx/s; the ratio to the sigverify
# ceiling; CPU by stage) came from rounds like these, each session
# writing the loop again.
#
#   ./scripts/ab-rounds.sh BASE [OTHER]
#
# BASE and OTHER are git revisions; without OTHER the second build is the
# working tree as it is. Each round runs both builds, each
# `tpu run --duration DURATION --banking-peer PEER FLAGS` with default
# flags otherwise, a fresh ledger each run, BASE first in odd rounds and
# OTHER first in even ones. It prints each run's figures,
# then each figure's median for both builds and in how many rounds
# OTHER's banking figure was the lower.
#
#   ROUNDS=6 DURATION=4s PEER=300 ./scripts/ab-rounds.sh 7609508
#   FLAGS='--sigverify-backend lanes/avx2x4' ROUNDS=3 ./scripts/ab-rounds.sh HEAD~2 HEAD   # avx2x4
#   GODEBUG=cpu.avx512ifma=off ROUNDS=3 ./scripts/ab-rounds.sh HEAD~2 HEAD   # avx2x4, builds before lanes/PATH
#   FLAGS='--block-cost-limit 1000000000000' ./scripts/ab-rounds.sh main
#
# Needs git and python3 (the summary reads the runs' JSON). Run it on an
# otherwise idle machine; the medians, not one round, are the figures.
set -euo pipefail
cd "$(dirname "$0")/.."

base=${1:?usage: ab-rounds.sh BASE-REVISION [OTHER-REVISION] (OTHER: the working tree)}
other=${2:-}
rounds=${ROUNDS:-6}
duration=${DURATION:-4s}
peer=${PEER:-300}
flags=${FLAGS:-}

work=$(mktemp -d)
cleanup() {
	for d in "$work"/src-*; do
		[ -d "$d" ] && git worktree remove --force "$d" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

# build NAME REV: builds REV (the working tree when REV is empty) into
# $work/tpu-NAME. GODEBUG is for the runs only: the toolchain would print
# its cpu options as unknown, and the build cache would keep that warning
# and replay it in every later `go vet` and `go build`.
build() {
	local name=$1 rev=$2
	if [ -z "$rev" ]; then
		echo "== building $name: the working tree"
		env -u GODEBUG go build -o "$work/tpu-$name" ./cmd/tpu
		return
	fi
	echo "== building $name: $(git rev-parse --short "$rev") ($rev)"
	git worktree add --detach "$work/src-$name" "$rev" >/dev/null 2>&1
	(cd "$work/src-$name" && env -u GODEBUG go build -o "$work/tpu-$name" ./cmd/tpu)
	git worktree remove --force "$work/src-$name"
}
build a "$base"
build b "$other"

for r in $(seq 1 "$rounds"); do
	# The order turns each round: on a 2-core machine the first run of a
	# pair came out ahead (banking 2.21-2.30 against 2.39-2.47 us a
	# transaction with the builds either way round, 2026-12-07).
	order="a b"
	if [ $((r % 2)) = 0 ]; then order="b a"; fi
	for name in $order; do
		rm -rf "$work/ledger"
		# shellcheck disable=SC2086 # FLAGS: words
		if ! "$work/tpu-$name" run --duration "$duration" --banking-peer "$peer" $flags \
			--ledger "$work/ledger" --reset --rpc-addr "" --ws-addr "" \
			--summary-json "$work/$name-$r.json" >"$work/$name-$r.out" 2>"$work/$name-$r.err"; then
			echo "tpu run ($name, round $r) failed:" >&2
			tail -20 "$work/$name-$r.err" >&2
			exit 1
		fi
		python3 - "$work/$name-$r.json" "$name" "$r" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
if not d.get("accounting_ok"):
    sys.exit("round %s, %s: the accounting failed" % (sys.argv[3], sys.argv[2]))
p, s = d.get("banking_peer", {}), d["stage_cpu"]["stages"]
line = "round %s %s: %.0f tx/s, ceiling ratio %.2f, %d of %d slots full, CPU %.2f us/tx (sigverify %.2f, banking %.2f)" % (
    sys.argv[3], sys.argv[2], d["tps"], d.get("ceiling_ratio", 0), d["blocks"]["full_slots"], d["blocks"]["slots"],
    sum(v["us_per_tx"] for v in s.values()), s["sigverify"]["us_per_tx"], s["banking"]["us_per_tx"])
if p:  # PEER=0 runs no bench: no figures rather than zeros
    line += ", bench %.2f us: ratio %.2f (+-%.0f%% sampling), cold %.2f" % (
        p.get("us_per_tx", 0), p.get("ratio", 0), 100 * p.get("ratio_sampling_err", 0), p.get("cold_ratio", 0))
print(line)
EOF
	done
done

python3 - "$work" "$rounds" <<'EOF'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def figures(name, r):
    d = json.load(open("%s/%s-%d.json" % (work, name, r)))
    p, s = d.get("banking_peer", {}), d["stage_cpu"]["stages"]
    f = {
        "tx/s": d["tps"], "ceiling ratio": d.get("ceiling_ratio", 0),
        "CPU us/tx": sum(v["us_per_tx"] for v in s.values()),
        "sigverify us/tx": s["sigverify"]["us_per_tx"], "banking us/tx": s["banking"]["us_per_tx"],
    }
    if p:  # PEER=0 runs no bench
        f.update({"bench us/tx": p.get("us_per_tx", 0), "ratio to the bench": p.get("ratio", 0),
                  "ratio to the cold bench": p.get("cold_ratio", 0)})
    return f
a = [figures("a", r) for r in range(1, rounds + 1)]
b = [figures("b", r) for r in range(1, rounds + 1)]
print("medians over %d rounds (a: BASE, b: OTHER):" % rounds)
for k in a[0]:
    if k not in b[0]:
        continue
    print("  %-24s a %10.2f   b %10.2f" % (k, statistics.median(x[k] for x in a), statistics.median(x[k] for x in b)))
lower = sum(1 for x, y in zip(a, b) if y["banking us/tx"] < x["banking us/tx"])
print("b's banking CPU a transaction was the lower in %d of %d rounds" % (lower, rounds))
EOF
