package main

import (
	"flag"
	"testing"
)

// TestTxHistoryFlag: history is kept by default, and --tx-history=false
// reaches the bank's config.
func TestTxHistoryFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		off  bool
	}{{nil, false}, {[]string{"--tx-history=false"}, true}, {[]string{"--tx-history"}, false}} {
		fs := flag.NewFlagSet("tpu run", flag.ContinueOnError)
		f := defineRunFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := graphConfig(*f)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Banking.Bank.NoTxHistory != c.off {
			t.Fatalf("%v: NoTxHistory %v", c.args, cfg.Banking.Bank.NoTxHistory)
		}
	}
}
