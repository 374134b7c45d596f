package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func parseRun(t *testing.T, args ...string) runFlags {
	t.Helper()
	fs := flag.NewFlagSet("tpu run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := defineRunFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return *f
}

// A public bind is warned of, naming each service reachable from other
// machines and what it gives away; requestAirdrop is off there unless
// --rpc-faucet, on loopback always on.
func TestExposure(t *testing.T) {
	for _, c := range []struct {
		args     []string
		ws       string
		want     []string // substrings, one per exposed service, in order
		noFaucet bool
	}{
		{args: nil, ws: "127.0.0.1:8900"},
		{args: []string{"--metrics-addr", ":9100"}, ws: "127.0.0.1:8900"},
		{args: []string{"--rpc-addr", "0.0.0.0:8899"}, ws: "0.0.0.0:8900",
			want: []string{"JSON-RPC at 0.0.0.0:8899", "PubSub at 0.0.0.0:8900"}, noFaucet: true},
		{args: []string{"--rpc-addr", "0.0.0.0:8899", "--rpc-faucet"}, ws: "0.0.0.0:8900",
			want: []string{"requestAirdrop ON", "PubSub at 0.0.0.0:8900"}},
		{args: []string{"--rpc-addr", ":8899"}, ws: "127.0.0.1:8900",
			want: []string{"requestAirdrop off"}, noFaucet: true},
		{args: []string{"--metrics-addr", "0.0.0.0:9100", "--pprof"}, ws: "127.0.0.1:8900",
			want: []string{"metrics at 0.0.0.0:9100: the pipeline's counters and memory, and the Go heap profile"}},
	} {
		f := parseRun(t, c.args...)
		got := exposure(f, c.ws)
		if len(got) != len(c.want) {
			t.Errorf("%v: %q, want %d services named", c.args, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%v: %q, want %q", c.args, got[i], w)
			}
		}
		if rc := rpcConfig(f); rc.NoFaucet != c.noFaucet {
			t.Errorf("%v: NoFaucet %v, want %v", c.args, rc.NoFaucet, c.noFaucet)
		}
	}
}
