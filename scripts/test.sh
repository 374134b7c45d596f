#!/usr/bin/env bash
# The project's test command (README, .ci/run). Runs from any directory.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v go >/dev/null; then
	echo "test.sh: go is not on PATH (need Go 1.26; /usr/local/go/bin?)" >&2
	exit 1
fi
echo "== $(go version)"

# Every step runs, even after one fails, so that one failure (a flaky
# test) does not hide what the steps after it would have found; the
# script fails at the end, naming the steps that failed.
failed=()
step() {
	local name=$1
	shift
	echo "== $name"
	if ! "$@"; then
		echo "-- FAILED: $name" >&2
		failed+=("$name")
	fi
}

gofmt_clean() {
	local unformatted
	unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
	if [ -n "$unformatted" ]; then
		echo "not gofmt-ed:" $unformatted >&2
		return 1
	fi
}
step gofmt gofmt_clean
step "go vet" go vet ./...
step "go vet -tags invariants" go vet -tags invariants ./...

# staticcheck, pinned (a newer release may add checks), over the plain
# and the invariants build as one matrix, so that code one build tag
# alone uses is not reported unused by the other.
staticcheck_matrix() {
	printf 'default:\ninvariants: -tags=invariants\n' |
		go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -matrix ./...
}
step staticcheck staticcheck_matrix

# Linux-only code (recvmmsg, SO_REUSEPORT) lives in build-tagged files
# beside a portable fallback; TestPortable at the root checks the same.
step "portable: GOOS=darwin go build" env GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go build ./...
step "portable: GOOS=windows go vet" env GOOS=windows CGO_ENABLED=0 go vet ./...

step "go test (plain build: allocation checks)" go test -count=1 ./...
step "go test -race -tags invariants (races, poisoned batches, double releases, leaks)" \
	go test -count=1 -race -tags invariants ./...

# A count, not a duration: Go 1.26's fuzz coordinator can fail a
# duration-bounded run with a bare "context deadline exceeded" when a
# starved worker misses the deadline (golang/go#75804, fixed in 1.27).
# 300,000 inputs take 9-20 s on a 2-core machine.
step "fuzz FuzzParse (short)" go test -run '^$' -fuzz '^FuzzParse$' -fuzztime "${FUZZTIME:-300000x}" ./txview
step "fuzz FuzzHandle (short: PubSub's client messages)" \
	go test -run '^$' -fuzz '^FuzzHandle$' -fuzztime "${PUBSUB_FUZZTIME:-20000x}" ./rpc/pubsub
# Every lane path this CPU runs (portable, avx2x4, ifma8), lane by lane;
# 5,000 inputs take about 10 s.
step "fuzz FuzzLanesDifferential (short: the lanes verifier against voi)" \
	go test -run '^$' -fuzz '^FuzzLanesDifferential$' -fuzztime "${LANES_FUZZTIME:-5000x}" ./stages/sigverify
# splitK (the Lehmer split of k) against its math/big reference;
# 100,000 inputs take about 5-10 s.
step "fuzz FuzzSplitK (short: the split of k against math/big)" \
	go test -run '^$' -fuzz '^FuzzSplitK$' -fuzztime "${SPLITK_FUZZTIME:-100000x}" ./stages/sigverify
# reduceWide (the hash mod L, Barrett) against math/big and voi;
# 100,000 inputs take about 3-5 s.
step "fuzz FuzzReduceWide (short: the hash's reduction mod L against math/big)" \
	go test -run '^$' -fuzz '^FuzzReduceWide$' -fuzztime "${REDUCE_FUZZTIME:-100000x}" ./stages/sigverify

if [ ${#failed[@]} -gt 0 ]; then
	echo "== FAILED: ${#failed[@]} step(s):" >&2
	printf '   %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "== all tests passed"
