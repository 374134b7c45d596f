package main

import (
	"flag"
	"testing"
	"time"
)

// TestTxHistoryFlag: history is kept by default with --no-gen (a server
// for clients) and not with the load generator (a measurement run), and
// an explicit --tx-history reaches the bank's config either way.
func TestTxHistoryFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		off  bool
	}{
		{nil, true},
		{[]string{"--no-gen"}, false},
		{[]string{"--tx-history=false"}, true},
		{[]string{"--no-gen", "--tx-history=false"}, true},
		{[]string{"--tx-history"}, false},
	} {
		fs := flag.NewFlagSet("tpu run", flag.ContinueOnError)
		f := defineRunFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		settleDefaults(fs, f)
		cfg, err := graphConfig(*f)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Banking.Bank.NoTxHistory != c.off {
			t.Fatalf("%v: NoTxHistory %v", c.args, cfg.Banking.Bank.NoTxHistory)
		}
	}
}

// TestNoGenRunsUntilSignal: tpu run --no-gen is a server: without
// --duration it runs until a signal; an explicit --duration still bounds
// it, and the load generator keeps its 10 s default.
func TestNoGenRunsUntilSignal(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 10 * time.Second},
		{[]string{"--no-gen"}, 0},
		{[]string{"--no-gen", "--duration", "3s"}, 3 * time.Second},
		{[]string{"--duration", "2s"}, 2 * time.Second},
	} {
		fs := flag.NewFlagSet("tpu run", flag.ContinueOnError)
		f := defineRunFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		settleDefaults(fs, f)
		if f.duration != c.want {
			t.Errorf("%v: duration %v, want %v", c.args, f.duration, c.want)
		}
	}
}
