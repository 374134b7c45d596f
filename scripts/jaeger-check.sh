#!/usr/bin/env bash
# Checks tpu's spans in a real Jaeger: builds Jaeger v1.76.0's all-in-one
# once (cached), then runs cmd/tpu's TestJaeger (build tag jaeger), which
# starts it on 127.0.0.1 (OTLP gRPC 4317, query HTTP 16686), runs
# tpu run --otlp-endpoint against it for 3 s, reads the traces back
# through Jaeger's HTTP query API, checks hops, parents and links, and
# stops Jaeger. Not part of scripts/test.sh: it needs the module proxy
# (once) and a few minutes to build Jaeger.
#
#   ./scripts/jaeger-check.sh            # TPU_JAEGER=/path/to/jaeger to use your own binary
set -euo pipefail
cd "$(dirname "$0")/.."

version=v1.76.0
bin="${TPU_JAEGER:-${XDG_CACHE_HOME:-$HOME/.cache}/tpu/jaeger-$version}"
if [ ! -x "$bin" ]; then
	# 'go install' and 'go run' of jaeger/cmd/jaeger@v1.76.0 refuse it
	# (its go.mod has replace directives), so build it inside a copy of
	# its own module.
	echo "== building jaeger $version into $bin (minutes, the first time)"
	src=$(go mod download -json "github.com/jaegertracing/jaeger@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	if [ -z "$src" ]; then
		echo "jaeger-check: go mod download github.com/jaegertracing/jaeger@$version gave no source directory" >&2
		exit 1
	fi
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	cp -r "$src" "$work/jaeger"
	chmod -R u+w "$work/jaeger"
	mkdir -p "$(dirname "$bin")"
	(cd "$work/jaeger" && GOWORK=off go build -o "$bin" ./cmd/jaeger)
fi

echo "== TestJaeger with $bin"
TPU_JAEGER="$bin" go test -count=1 -tags jaeger -run '^TestJaeger$' -v -timeout 10m ./cmd/tpu
