#!/usr/bin/env bash
# Issue 24's scaling check, one command: executed tx/s of a leader alone
# on one core (GOMAXPROCS 1, checking its signatures itself) against the
# same leader on one core with a verifier process on another core
# (GOMAXPROCS 1, one worker) checking every signature
# (--sigverify-local=false). Each process is pinned with taskset where
# it is installed (leader and its load generator on core LEADER_CPU,
# the verifier on VERIFIER_CPU); without taskset only GOMAXPROCS bounds
# them, and the line says so. ROUNDS rounds, each running both
# configurations back to back; prints every run's tx/s, the medians and
# their ratio (the issue's goal: >= 1.7). The figure means something
# only on cores nothing else uses: on a shared machine say so beside it.
#
# Beside tx/s, each round prints the leader's CPU a transaction executed
# in both runs and the verifier's in the remote one (getrusage-style
# totals, which a machine shared with other work distorts less than
# tx/s), and the remote run's passes and their mean size.
#
# Both runs lift the block cost limit (BLOCK_COST_LIMIT, default 10^12
# compute units a slot): the load's transfers cost about 1,690 CU each,
# so mainnet's 100M CU a 400 ms slot caps them at about 148k tx/s, which
# the leader with a verifier nearly reaches on a quiet machine; the ratio
# would then measure the limit, not the pipeline. BLOCK_COST_LIMIT=0
# keeps mainnet's.
#
# PERF=1 also records each leader with perf for PERF_SECONDS (default 3),
# from a second into the load, and prints its CPU a transaction by
# bucket (perf_buckets): the hop's own code, the runtime, the audit, the
# parse, the checks, the rest. The hop's share is its bucket (and the
# runtime's excess over the local run's) against the local run's checks.
#
#   ./scripts/remote-scaling.sh                 # ROUNDS=3 DURATION=10s LEADER_CPU=0 VERIFIER_CPU=1
#   PERF=1 DURATION=6s ./scripts/remote-scaling.sh
#   LEADER_FLAGS='--sigverify-max-pending 4096' ./scripts/remote-scaling.sh
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${ROUNDS:-3}
duration=${DURATION:-10s}
leader_cpu=${LEADER_CPU:-0}
verifier_cpu=${VERIFIER_CPU:-1}
port=${VERIFIER_PORT:-18031}
leader_flags=${LEADER_FLAGS:-} # more tpu run flags, both runs: e.g. --sigverify-max-pending 4096
block_cost_limit=${BLOCK_COST_LIMIT:-1000000000000} # 0: mainnet's 100M CU a slot
perf=${PERF:-0}                  # 1: perf record each leader (needs perf and python3)
perf_seconds=${PERF_SECONDS:-3} # how long, from a second into the load: under DURATION less 1 s
perf_hz=${PERF_HZ:-1999}

work=$(mktemp -d)
verifier_pid=
cleanup() {
	if [ -n "$verifier_pid" ]; then kill -TERM "$verifier_pid" 2>/dev/null || true; wait "$verifier_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

echo "== building tpu"
go build -o "$work/tpu" ./cmd/tpu

pin() { # pin CPU CMD...: exec CMD on core CPU if taskset is here (run it in the background: $! is then CMD)
	local cpu=$1
	shift
	if command -v taskset >/dev/null; then exec taskset -c "$cpu" "$@"; else exec "$@"; fi
}
if command -v taskset >/dev/null; then
	echo "== pinned: leader on core $leader_cpu, verifier on core $verifier_cpu ($(nproc) cores here)"
else
	echo "== taskset not found: processes are not pinned, only GOMAXPROCS=1 bounds each"
fi

if [ "$block_cost_limit" = 0 ]; then
	echo "== block cost limit: mainnet's 100M CU a slot (about 148k of the load's transfers a second)"
else
	echo "== block cost limit: $block_cost_limit CU a slot (lifted: BLOCK_COST_LIMIT=0 keeps mainnet's 100M)"
fi

# run NAME ARGS...: one tpu run of $duration, closed-loop; prints its tx/s.
run() {
	local name=$1
	shift
	# shellcheck disable=SC2086 # LEADER_FLAGS: words
	pin "$leader_cpu" "$work/tpu" run --gomaxprocs 1 --duration "$duration" --sync nosync \
		--block-cost-limit "$block_cost_limit" $leader_flags \
		--ledger "$work/ledger" --reset --tpu-addr 127.0.0.1:0 --rpc-addr "" --ws-addr "" \
		--summary-json "$work/$name.json" "$@" >"$work/$name.out" 2>"$work/$name.err" &
	local leader=$!
	if [ "$perf" = 1 ]; then
		# From a second into the load, for PERF_SECONDS: the leader's
		# stacks, sampled on its CPU time.
		until grep -q "sending for" "$work/$name.err" 2>/dev/null || ! kill -0 "$leader" 2>/dev/null; do sleep 0.1; done
		sleep 1
		perf record -q -e cpu-clock -F "$perf_hz" -g -p "$leader" -o "$work/$name.perf" -- sleep "$perf_seconds" >/dev/null 2>&1 || true
	fi
	wait "$leader" || {
		echo "tpu run ($name) failed:" >&2
		tail -20 "$work/$name.err" >&2
		exit 1
	}
	# The summary is indented JSON: the top level's keys at two spaces.
	grep -q '^  "accounting_ok": true' "$work/$name.json" || { echo "tpu run ($name): accounting failed" >&2; exit 1; }
	# The rate while load was offered (tps_while_offered): what had
	# executed when the load stopped, over that time. A pair passes the
	# leader's own sigverify ceiling, which sizes the load, so its load
	# often runs out before $duration (load_exhausted_s); its tps, over
	# the time load was offered, would then count the backlog drained
	# after it, up to a few percent in the pair's favour. Older builds
	# lack the field: their tps.
	local rate
	rate=$(sed -n 's/^  "tps_while_offered": \([0-9.e+]*\),*$/\1/p' "$work/$name.json")
	[ -n "$rate" ] || rate=$(sed -n 's/^  "tps": \([0-9.e+]*\),*$/\1/p' "$work/$name.json")
	echo "$rate" | awk '{printf "%.0f\n", $1}'
	sed -n 's/^  "\(received\|executed\|seconds\|load_exhausted_s\)": \([0-9.e+]*\),*$/\1 \2/p' "$work/$name.json" | tr '\n' ' ' >"$work/$name.figures"
	# The leader's CPU a transaction executed: its process's CPU over the
	# load (stage_cpu), which a busy machine inflates less than tx/s.
	local cpu executed
	cpu=$(sed -n 's/^ *"process_cpu_s": \([0-9.e+-]*\),*$/\1/p' "$work/$name.json")
	executed=$(sed -n 's/^  "executed": \([0-9]*\),*$/\1/p' "$work/$name.json")
	awk -v c="$cpu" -v n="$executed" 'BEGIN { printf "%.2f\n", (n > 0 ? c * 1e6 / n : 0) }' >"$work/$name.cpu"
	echo -n "leader CPU $(cat "$work/$name.cpu") us/tx " >>"$work/$name.figures"
	# The remote run's passes: how many packets each, on average.
	local passes packets
	passes=$(sed -n 's/^    "passes": \([0-9]*\),*$/\1/p' "$work/$name.json")
	packets=$(sed -n 's/^    "packets": \([0-9]*\),*$/\1/p' "$work/$name.json")
	if [ -n "$passes" ] && [ "$passes" -gt 0 ]; then
		echo -n "$passes passes of $((packets / passes)) packets " >>"$work/$name.figures"
	fi
	if [ "$perf" = 1 ] && [ -s "$work/$name.perf" ]; then
		local tps
		tps=$(sed -n 's/^  "tps": \([0-9.e+]*\),*$/\1/p' "$work/$name.json")
		echo -n "perf $(perf script -i "$work/$name.perf" -F comm,ip,sym 2>/dev/null | perf_buckets "$tps") " >>"$work/$name.figures"
	fi
}

# perf_buckets TPS: perf script's stacks on stdin, each sample put in the
# first bucket whose frames it has (the parse, before the checks or in
# them; the audit; the hop: the remote package, protoactor's remote,
# gRPC, HTTP/2; the signature checks, with SHA-512's assembly, below
# which perf loses the stack; the runtime: no Go frame outside it, i.e.
# sysmon and the scheduler's sleeps and wake-ups; the rest), printed as
# microseconds of leader CPU a transaction at TPS over PERF_SECONDS.
perf_buckets() {
	python3 -c '
import re, sys
tps, hz, secs = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
order = ["hop", "runtime", "audit", "parse", "checks", "rest"]
n = dict.fromkeys(order, 0)
def bucket(st):
    s = " ".join(st)
    if "sigverify.Parse" in s or "sigverify.parse" in s: return "parse"
    if "auditor" in s: return "audit"
    if re.search(r"tpu/remote\.|protoactor-go/remote|google\.golang\.org/grpc|x/net/http2", s): return "hop"
    if re.search(r"sigverify\.\(\*Verifier\)|lanesBackend|sigverify\.check", s): return "checks"
    if "sha512.block" in s and "tpugo" not in s: return "checks"
    if not [f for f in st if re.match(r"[a-z0-9.]+/", f) and not f.startswith("internal/runtime")]: return "runtime"
    return "rest"
st = []
for line in sys.stdin:
    if not line.strip():
        if st: n[bucket(st)] += 1
        st = []
    elif line[0] in " \t":
        p = line.split(None, 1)
        st.append(p[1].strip() if len(p) > 1 else "")
if st: n[bucket(st)] += 1
tx = tps * secs
print(" ".join("%s %.3f" % (k, n[k] / hz / tx * 1e6) for k in order) + " us/tx")
' "$1" "$perf_hz" "$perf_seconds"
}

# proc_cpu PID: the process's CPU so far, in clock ticks (user + system).
proc_cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

local_tps=()
remote_tps=()
for r in $(seq 1 "$rounds"); do
	local_tps+=("$(run "local-$r")")
	# Started directly (taskset execs it), so that $! is the verifier;
	# stopped with SIGTERM (a background job ignores SIGINT).
	if command -v taskset >/dev/null; then
		GOMAXPROCS=1 taskset -c "$verifier_cpu" "$work/tpu" verifier --listen "127.0.0.1:$port" --workers 1 >"$work/verifier-$r.out" 2>"$work/verifier-$r.err" &
	else
		GOMAXPROCS=1 "$work/tpu" verifier --listen "127.0.0.1:$port" --workers 1 >"$work/verifier-$r.out" 2>"$work/verifier-$r.err" &
	fi
	verifier_pid=$!
	for _ in $(seq 1 100); do
		grep -q "verifier serving" "$work/verifier-$r.err" 2>/dev/null && break
		sleep 0.1
	done
	if ! kill -0 "$verifier_pid" 2>/dev/null || ! grep -q "verifier serving" "$work/verifier-$r.err"; then
		echo "tpu verifier did not start (port $port taken? VERIFIER_PORT sets it):" >&2
		tail -20 "$work/verifier-$r.err" >&2
		exit 1
	fi
	v0=$(proc_cpu "$verifier_pid")
	remote_tps+=("$(run "remote-$r" --verifiers "127.0.0.1:$port" --sigverify-local=false)")
	v1=$(proc_cpu "$verifier_pid")
	# The verifier's CPU over the whole run (the leader's start and
	# drain too, when it only answers probes), a transaction executed.
	awk -v t=$((v1 - v0)) -v hz="$(getconf CLK_TCK)" -v n="$(sed -n 's/^  "executed": \([0-9]*\),*$/\1/p' "$work/remote-$r.json")" \
		'BEGIN { printf "%.2f\n", (n > 0 ? t / hz * 1e6 / n : 0) }' >"$work/verifier-$r.cpu"
	echo -n "verifier CPU $(cat "$work/verifier-$r.cpu") us/tx" >>"$work/remote-$r.figures"
	kill -TERM "$verifier_pid"
	wait "$verifier_pid" || true
	verifier_pid=
	echo "round $r: leader alone ${local_tps[-1]} tx/s ($(cat "$work/local-$r.figures")); leader + verifier ${remote_tps[-1]} tx/s ($(cat "$work/remote-$r.figures"))"
done
lm=$(printf '%s\n' "${local_tps[@]}" | median)
rm_=$(printf '%s\n' "${remote_tps[@]}" | median)
echo "median: leader alone (1 core) $lm tx/s; leader (1 core) + verifier (1 core) $rm_ tx/s"
echo "median CPU a transaction: leader alone $(cat "$work"/local-*.cpu | median) us; with the verifier: leader $(cat "$work"/remote-*.cpu | median) us, verifier $(cat "$work"/verifier-*.cpu | median) us"
awk -v a="$lm" -v b="$rm_" 'BEGIN { printf "ratio: %.2fx (goal >= 1.7x)\n", (a > 0 ? b / a : 0) }'
