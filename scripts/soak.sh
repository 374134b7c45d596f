#!/usr/bin/env bash
# scripts/soak.sh [DURATION]: runs tpu run under mixed load for DURATION
# (default 30m) and checks that nothing grows: RSS, open descriptors,
# goroutines and the packet pool's live batches, sampled every SAMPLE
# seconds. Prints a table of the samples and a verdict; exits 1 if
# something grew (or the run failed), 0 if all stayed flat.
#
# The load, all at once:
#   - tpu gen, open-loop at RATE tx/s with INVALID (0.2) of it invalid, in
#     segments of SEGMENT (10s) back to back, each signed afresh with a
#     fresh blockhash (a pre-signed load expires after 150 slots, and
#     would have to be held in memory whole); each segment also polls
#     RPC for its confirmations and checks the balances it moved;
#   - CLIENTS (4) RPC clients (curl in a loop): getBalance,
#     getSignatureStatuses of a signature nobody sent with
#     searchTransactionHistory (a history search to the RPC's cap),
#     sendTransaction of a well-formed transaction with a zero signature
#     (sigverify discards it: bad_signature), requestAirdrop of 1 lamport.
# RATE defaults to half of the pipeline's ceiling: the throughput a short
# closed-loop probe run (tpu run, load as fast as it is accepted)
# executes on this machine. (Half the sigverify ceiling, one core's
# verify rate times the cores, is far beyond what the whole pipeline and
# the generator's signing sustain on a small machine: most of it would be
# shed, and a segment's signing would outlast its blockhash.)
#
# Each sample also scrapes /metrics for the process's memory: the Go
# heap's live bytes and GC goal, all the Go runtime holds from the OS
# (go_mem), and Pebble's hand-allocated memtables and block cache
# (pebble_kb, outside the Go runtime; its bound, banking.LedgerMemoryBound,
# is 264 MiB: four 64 MiB memtables and an 8 MiB cache), and the packet
# batches the pool holds (live and idle: a high-water mark, up to its
# MaxIdle), and the transactions executed per second since the sample
# before: the status windows (the bank's and the RPC's, 151 slots of
# signatures each) follow it, and Go maps keep their peak size, so the
# Go heap follows the highest executed rate seen; a load that rises
# during the run (a shared machine freeing up) reads as growth. The heap profile is taken at PROFILE_AT (600) seconds and at
# the end (heap-Ts.pb.gz: go tool pprof -top DIR/tpu FILE).
#
# The verdict compares the mean of the last quarter of the samples with
# the mean of the second quarter (the first is warm-up: the pool, the
# status index and the ledger's caches fill). A metric grew if
#     last > second * (1 + TOL/100) + SLACK
# with TOL 10 (percent) for all, and SLACK 8 descriptors, 16 goroutines
# (connections come and go with the clients), 64 live batches (they
# follow the load from moment to moment: up to the fetch and banking
# budgets, 64 each, can be in flight), and 0 for the Go heap's live
# bytes, go_mem, and RSS less pebble_kb (rss_beyond_pebble). Pebble's
# memory is not flat but bounded by its configuration: its memtables
# start at 256 KiB and double up to 64 MiB as they fill, which at the
# soak's write rate takes hours; so pebble_kb must stay under its bound
# at every sample instead, and RSS under rss_beyond_pebble's second
# quarter (with TOL) plus that bound. (pebble_kb counts the memtable
# arenas whole; a fresh one's pages are touched as it fills, so
# rss_beyond_pebble reads low while one fills.) At least 8 samples are
# needed for a verdict. The judging alone: scripts/soak.sh --judge
# SAMPLES; scripts/soak.sh --self-test judges synthetic tables, flat and
# growing.
#
# Environment: RATE, INVALID, SEGMENT, CLIENTS, SAMPLE, TOL, SOAK_DIR
# (where the ledger and logs go; default a fresh temporary directory,
# removed at the end when the verdict is flat), TPU_FLAGS (more flags for
# tpu run). Linux only (/proc). Needs go, curl and base64.
set -euo pipefail
set -m # each background job in its own process group, so that cleanup can stop it whole
cd "$(dirname "$0")/.."

DURATION=${1:-30m}
INVALID=${INVALID:-0.2}
SEGMENT=${SEGMENT:-10s}
CLIENTS=${CLIENTS:-4}
SAMPLE=${SAMPLE:-10}
TOL=${TOL:-10}
PROFILE_AT=${PROFILE_AT:-600}

# judge FILE prints the verdict on a samples table (a header line naming
# the columns, then one line per sample) and returns 0 if all is flat, 1
# if something grew or went over its bound, 2 if there are too few
# samples. See the comment at the top for the rules.
judge() {
	awk -v tol="$TOL" '
	NR == 1 { for (c = 1; c <= NF; c++) col[$c] = c; next }
	{ n++; for (c = 1; c <= NF; c++) v[n, c] = $c }
	function mean(c, from, to,   i, s) { for (i = from; i <= to; i++) s += v[i, c]; return s / (to - from + 1) }
	# beyond: rss less what Pebble holds, per sample, in column nf + 1.
	END {
		if (n < 8) { printf "too few samples (%d) for a verdict: run longer\n", n; exit 2 }
		q = int(n / 4); bad = 0
		pebble = ("pebble_kb" in col) && ("pebble_max_kb" in col)
		if (pebble) {
			beyond = NF + 1
			for (i = 1; i <= n; i++) v[i, beyond] = v[i, col["rss_kb"]] - v[i, col["pebble_kb"]]
			col["rss_beyond_pebble_kb"] = beyond
		}
		# metric, slack: flat if mean(q4) <= mean(q2) * (1 + tol/100) + slack
		nf = split("fds 8 goroutines 16 live_batches 64 heap_live_kb 0 go_mem_kb 0", flat, " ")
		if (pebble) flat[++nf] = "rss_beyond_pebble_kb"
		else flat[++nf] = "rss_kb"
		flat[++nf] = 0
		printf "%-22s %14s %14s %14s %8s\n", "metric", "mean q2", "mean q4", "limit", "verdict"
		for (k = 1; k < nf; k += 2) {
			name = flat[k]
			if (!(name in col)) continue
			c = col[name]; a = mean(c, q + 1, 2 * q); b = mean(c, n - q + 1, n)
			limit = a * (1 + tol / 100) + flat[k + 1]
			g = b > limit
			printf "%-22s %14.1f %14.1f %14.1f %8s\n", name, a, b, limit, g ? "GREW" : "flat"
			bad += g
		}
		if (pebble) {
			# Pebble: under its bound at every sample; RSS: what lies
			# beyond Pebble, flat, plus at most Pebble bound.
			max = 0; bound = 0
			for (i = 1; i <= n; i++) {
				if (v[i, col["pebble_kb"]] > max) max = v[i, col["pebble_kb"]]
				if (v[i, col["pebble_max_kb"]] > bound) bound = v[i, col["pebble_max_kb"]]
			}
			g = max > bound
			printf "%-22s %14s %14.1f %14.1f %8s\n", "pebble_kb (max)", "", max, bound, g ? "OVER" : "bounded"
			bad += g
			c = col["rss_kb"]
			a = mean(beyond, q + 1, 2 * q) * (1 + tol / 100) + bound; b = mean(c, n - q + 1, n)
			g = b > a
			printf "%-22s %14.1f %14.1f %14.1f %8s\n", "rss_kb", mean(c, q + 1, 2 * q), b, a, g ? "OVER" : "bounded"
			bad += g
		}
		exit bad > 0
	}' "$1"
}

# self_test runs judge on synthetic tables: flat ones pass, a growing
# metric fails.
self_test() {
	local t fail=0 want got
	t=$(mktemp -d)
	# table NAME GROW: 40 samples; GROW names the column that grows by 1%
	# a sample (or "rss_pebble": RSS and Pebble grow together under the
	# bound, "pebble_over": Pebble past its bound, "none").
	table() {
		awk -v grow="$2" 'BEGIN {
			print "t_s rss_kb fds goroutines live_batches heap_live_kb heap_goal_kb go_mem_kb pebble_kb pebble_max_kb"
			for (i = 1; i <= 40; i++) {
				f = 1 + (grow == "none" ? 0 : 0.01 * i); w = (i % 2) ? 1.02 : 0.98 # some noise
				heap = 100000 * w * (grow == "heap_live_kb" ? f : 1)
				gomem = 250000 * w * (grow == "go_mem_kb" ? f : 1)
				pebble = 70000 + (grow == "rss_pebble" ? 3000 * i : 0) + (grow == "pebble_over" ? 20000 * i : 0)
				rss = gomem + pebble + 20000 + (grow == "rss_kb" ? 3000 * i : 0)
				fds = 24 + (grow == "fds" ? 2 * i : 0); gor = 30 + (grow == "goroutines" ? 2 * i : 0); live = 1 + (grow == "live_batches" ? 5 * i : 0)
				printf "%d %d %d %d %d %d %d %d %d %d\n", 10 * i, rss, fds, gor, live, heap, 2 * heap, gomem, pebble, 270336
			}
		}' >"$t/$1"
	}
	for c in none:0 rss_pebble:0 heap_live_kb:1 go_mem_kb:1 rss_kb:1 fds:1 goroutines:1 live_batches:1 pebble_over:1; do
		table "${c%%:*}" "${c%%:*}"
		want=${c##*:}
		got=0
		judge "$t/${c%%:*}" >"$t/${c%%:*}.out" || got=$?
		if [[ $got != "$want" ]]; then
			echo "self-test: growing ${c%%:*}: verdict exit $got, want $want:" >&2
			cat "$t/${c%%:*}.out" >&2
			fail=1
		fi
	done
	head -n 8 "$t/none" | judge /dev/stdin >/dev/null && { echo "self-test: 7 samples judged" >&2; fail=1; }
	rm -rf "$t"
	((fail == 0)) && echo "soak.sh self-test: ok"
	return "$fail"
}

case ${1:-} in
--self-test) self_test; exit ;;
--judge) judge "$2"; exit ;;
esac

seconds() { # a Go-style duration (90s, 30m, 1h, 1h30m) in seconds
	local d=$1 total=0 n unit
	while [[ $d =~ ^([0-9]+)(h|m|s)(.*)$ ]]; do
		n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]} d=${BASH_REMATCH[3]}
		case $unit in h) total=$((total + n * 3600)) ;; m) total=$((total + n * 60)) ;; s) total=$((total + n)) ;; esac
	done
	if [[ -n $d || $total -eq 0 ]]; then
		echo "soak.sh: duration $1: want e.g. 90s, 30m, 1h30m" >&2
		exit 2
	fi
	echo "$total"
}
total=$(seconds "$DURATION")
for tool in go curl base64; do
	command -v "$tool" >/dev/null || { echo "soak.sh: $tool is not on PATH" >&2; exit 2; }
done
[[ -d /proc/self/fd ]] || { echo "soak.sh: needs Linux's /proc" >&2; exit 2; }

dir=${SOAK_DIR:-$(mktemp -d -t tpu-soak.XXXXXX)}
mkdir -p "$dir"
echo "== soak $DURATION in $dir"
go build -o "$dir/tpu" ./cmd/tpu

pids=() # background jobs: each leads its process group
cleanup() {
	for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The rate: half the ceiling a short closed-loop run measures.
if [[ -z ${RATE:-} ]]; then
	"$dir/tpu" run --ledger "$dir/probe" --tpu-addr 127.0.0.1:0 --rpc-addr "" --duration 3s --count 60000 \
		>"$dir/probe.out" 2>"$dir/probe.log" || { cat "$dir/probe.log" "$dir/probe.out" >&2; exit 1; }
	ceiling=$(sed -n 's/^executed [0-9]* (\([0-9]*\) tx\/s).*/\1/p' "$dir/probe.out" | head -1)
	[[ -n $ceiling ]] || { echo "soak.sh: the probe run printed no throughput" >&2; cat "$dir/probe.out" >&2; exit 1; }
	RATE=$((ceiling / 2))
	echo "closed-loop ceiling $ceiling tx/s: rate $RATE tx/s"
	rm -rf "$dir/probe"
fi

# The server. The RPC clients all come from 127.0.0.1: a budget for
# expensive work that never runs out keeps their history searches and
# preflights running, as the soak means them to.
"$dir/tpu" run --no-gen --duration 0 --ledger "$dir/ledger" --tpu-addr 127.0.0.1:0 --rpc-addr 127.0.0.1:0 \
	--rpc-expensive-per-sec 1000000000 --metrics-addr 127.0.0.1:0 --pprof ${TPU_FLAGS:-} >"$dir/run.out" 2>"$dir/run.log" &
tpu=$!
pids+=("$tpu")
for _ in $(seq 600); do
	grep -q 'msg=metrics ' "$dir/run.log" 2>/dev/null && grep -q 'msg=json-rpc ' "$dir/run.log" && break
	kill -0 "$tpu" 2>/dev/null || { echo "soak.sh: tpu run exited:" >&2; cat "$dir/run.log" >&2; exit 1; }
	sleep 0.1 # polling the log: the server gives no other signal that it is up
done
field() { sed -n "s/.*msg=$1 .*$2=\([^ ]*\).*/\1/p" "$dir/run.log" | head -1; }
rpc=$(field json-rpc url)
metrics=$(field metrics url)
fetch=$(field tpu addr)
[[ -n $rpc && -n $metrics && -n $fetch ]] || { echo "soak.sh: tpu run did not start:" >&2; cat "$dir/run.log" >&2; exit 1; }
echo "tpu run pid $tpu: fetch $fetch, rpc $rpc, metrics $metrics"

end=$(($(date +%s) + total))

# The load generator, segment after segment until the end.
(
	i=0
	while (($(date +%s) < end)); do
		i=$((i + 1))
		"$dir/tpu" gen --rpc "$rpc" --tpu "$fetch" --rate "$RATE" --duration "$SEGMENT" --settle 2s \
			--invalid-fraction "$INVALID" >>"$dir/gen.out" 2>>"$dir/gen.log" || echo "segment $i: exit $?" >>"$dir/gen.failed"
	done
) &
pids+=("$!")

# The RPC clients.
ones() { printf '1%.0s' $(seq "$1"); }
zero_sig=$(ones 64) # base58 of 64 zero bytes
# A transfer-shaped transaction: one zero signature, header (1 signer, 0
# read-only signed, 1 read-only unsigned), two keys (a payer, the system
# program), a zero blockhash, one instruction with no accounts or data.
tx=$({
	printf '\x01'
	head -c 64 /dev/zero
	printf '\x01\x00\x01\x02'
	head -c 31 /dev/zero
	printf '\x07'
	head -c 32 /dev/zero
	head -c 32 /dev/zero
	printf '\x01\x01\x00\x00'
} | base64 | tr -d '\n')
post() { curl -s --max-time 10 -H 'Content-Type: application/json' -d "$1" "$rpc" >/dev/null || true; }
for c in $(seq "$CLIENTS"); do
	to=$(ones 31)$((c % 8 + 2)) # 31 zero bytes and c % 8 + 1: one recipient per client
	(
		while (($(date +%s) < end)); do
			post '{"jsonrpc":"2.0","id":1,"method":"getBalance","params":["11111111111111111111111111111111"]}'
			post '{"jsonrpc":"2.0","id":2,"method":"getSignatureStatuses","params":[["'"$zero_sig"'"],{"searchTransactionHistory":true}]}'
			post '{"jsonrpc":"2.0","id":3,"method":"sendTransaction","params":["'"$tx"'",{"encoding":"base64"}]}'
			post '{"jsonrpc":"2.0","id":4,"method":"requestAirdrop","params":["'"$to"'",1]}'
		done
	) &
	pids+=("$!")
done

# Sampling. One scrape per sample; the heap profile at PROFILE_AT
# seconds and after the last sample.
scrape() { curl -s --max-time 5 "$metrics" >"$dir/scrape" || :; }
metric() { awk -v m="$1" '$1 == m || index($1, m "{") == 1 { s += $NF } END { printf "%.0f\n", s + 0 }' "$dir/scrape"; }
kb() { echo $(($(metric "$1") / 1024)); }
executed() { awk '/^tpu_packets_total\{/ && /outcome="executed_(ok|failed)"/ { s += $NF } END { printf "%.0f\n", s + 0 }' "$dir/scrape"; }
heap() { curl -s --max-time 10 -o "$dir/heap-$1s.pb.gz" "${metrics%/metrics}/debug/pprof/heap" || :; }
printf '%8s %10s %6s %10s %12s %12s %12s %12s %12s %12s %12s %14s\n' t_s rss_kb fds goroutines live_batches \
	heap_live_kb heap_goal_kb go_mem_kb pebble_kb pebble_max_kb pool_batches executed_per_s | tee "$dir/samples"
start=$(date +%s)
k=0
profiled=0
t=0
last_t=0
last_exec=0
while (($(date +%s) < end)); do
	k=$((k + 1))
	wait_s=$((start + k * SAMPLE - $(date +%s)))
	((wait_s <= 0)) || sleep "$wait_s" # the sampling period itself: on a grid, whatever a sample costs
	kill -0 "$tpu" 2>/dev/null || { echo "soak.sh: tpu run died:" >&2; tail -20 "$dir/run.log" >&2; exit 1; }
	t=$(($(date +%s) - start))
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$tpu/status")
	fds=$(ls "/proc/$tpu/fd" | wc -l)
	scrape
	exec_n=$(executed)
	rate=$(((exec_n - last_exec) / (t > last_t ? t - last_t : 1)))
	last_t=$t last_exec=$exec_n
	printf '%8d %10d %6d %10d %12d %12d %12d %12d %12d %12d %12d %14d\n' "$t" "$rss" "$fds" "$(metric tpu_goroutines)" "$(metric tpu_pool_live)" \
		"$(kb tpu_go_heap_live_bytes)" "$(kb tpu_go_heap_goal_bytes)" "$(kb tpu_go_memory_bytes)" \
		$((($(metric tpu_pebble_memtable_bytes) + $(metric tpu_pebble_block_cache_bytes)) / 1024)) \
		"$(kb tpu_pebble_memory_bound_bytes)" $(($(metric tpu_pool_live) + $(metric tpu_pool_idle))) "$rate" | tee -a "$dir/samples"
	if ((!profiled && t >= PROFILE_AT)); then
		heap "$t"
		profiled=1
	fi
done

heap "$t"

# The load stops by itself at the end (the last segment runs out, with
# its settling); then the server is stopped: it drains and prints its
# summary.
wait "${pids[@]:1}" 2>/dev/null || true
kill -INT "$tpu"
status=0
wait "$tpu" || status=$?
pids=()
fail=0
if ((status != 0)); then
	echo "FAIL: tpu run exited $status after SIGINT:" >&2
	tail -20 "$dir/run.log" >&2
	fail=1
fi
grep -q 'accounting ok: true' "$dir/run.out" || { echo "FAIL: no 'accounting ok: true' in the summary" >&2; fail=1; }
if grep -q -e panic -e 'pebble: closed' "$dir/run.log"; then
	echo "FAIL: a panic in tpu run's log" >&2
	fail=1
fi
grep -E '^(executed|  dropped)' "$dir/run.out" || true
if [[ -s $dir/gen.failed ]]; then
	echo "FAIL: tpu gen segments failed (a balance off?):" >&2
	cat "$dir/gen.failed" >&2
	fail=1
fi
echo "gen segments summarized: $(cat "$dir/gen.out" "$dir/gen.log" 2>/dev/null | grep -c '^== tpu gen summary' || true)"
grep -h '^confirmed ' "$dir/gen.out" "$dir/gen.log" 2>/dev/null | tail -3 || true

# The verdict.
judge "$dir/samples" || fail=1
if ((fail)); then
	echo "== soak: FAIL (kept $dir)"
	exit 1
fi
echo "== soak: flat"
[[ -n ${SOAK_DIR:-} ]] || rm -rf "$dir"
