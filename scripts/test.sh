#!/usr/bin/env bash
# The project's test command (README, .ci/run). Runs from any directory.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v go >/dev/null; then
	echo "test.sh: go is not on PATH (need Go 1.26; /usr/local/go/bin?)" >&2
	exit 1
fi
echo "== $(go version)"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "not gofmt-ed:" $unformatted >&2
	exit 1
fi

echo "== go vet"
go vet ./...
go vet -tags invariants ./...

echo "== staticcheck (the plain and the invariants build, as one matrix)"
# Pinned: a newer release may add checks. A matrix, so that code used by
# one build tag alone is not reported unused by the other.
printf 'default:\ninvariants: -tags=invariants\n' |
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -matrix ./...

echo "== portable: GOOS=darwin go build, GOOS=windows go vet"
# Linux-only code (recvmmsg, SO_REUSEPORT) lives in build-tagged files
# beside a portable fallback; TestPortable at the root checks the same.
GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go build ./...
GOOS=windows CGO_ENABLED=0 go vet ./...

echo "== go test (plain build: allocation checks)"
go test -count=1 ./...

echo "== go test -race -tags invariants (races, poisoned batches, double releases, leaks)"
go test -count=1 -race -tags invariants ./...

echo "== fuzz FuzzParse (short)"
# A count, not a duration: Go 1.26's fuzz coordinator can fail a
# duration-bounded run with a bare "context deadline exceeded" when a
# starved worker misses the deadline (golang/go#75804, fixed in 1.27).
# 300,000 inputs take 9-20 s on a 2-core machine.
go test -run '^$' -fuzz '^FuzzParse$' -fuzztime "${FUZZTIME:-300000x}" ./txview

echo "== fuzz FuzzHandle (short: PubSub's client messages)"
go test -run '^$' -fuzz '^FuzzHandle$' -fuzztime "${PUBSUB_FUZZTIME:-20000x}" ./rpc/pubsub

echo "== fuzz FuzzLanesDifferential (short: the lanes verifier against voi)"
# Every lane path this CPU runs (portable, avx2x4, ifma8), lane by lane;
# 5,000 inputs take about 10 s.
go test -run '^$' -fuzz '^FuzzLanesDifferential$' -fuzztime "${LANES_FUZZTIME:-5000x}" ./stages/sigverify

echo "== all tests passed"
