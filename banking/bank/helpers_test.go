package bank

import "testing"

const testSeed = "banking-test"

func openBank(t testing.TB, cfg Config) *Bank {
	t.Helper()
	if cfg.Genesis.Seed == "" {
		cfg.Genesis.Seed = testSeed
	}
	if cfg.Genesis.Accounts == 0 {
		cfg.Genesis.Accounts = 16
	}
	b, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
