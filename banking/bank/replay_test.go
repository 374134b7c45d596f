package bank

import (
	"testing"
)

func TestAccountsHash(t *testing.T) {
	open := func(g GenesisConfig) *Bank {
		b, err := Open(Config{Genesis: g})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	a, b := open(GenesisConfig{Seed: "h", Accounts: 50}), open(GenesisConfig{Seed: "h", Accounts: 50})
	if a.AccountsHash() != b.AccountsHash() {
		t.Fatal("two banks of one genesis hash differently")
	}
	for name, c := range map[string]*Bank{
		"another seed":     open(GenesisConfig{Seed: "g", Accounts: 50}),
		"one account more": open(GenesisConfig{Seed: "h", Accounts: 51}),
		"another balance":  open(GenesisConfig{Seed: "h", Accounts: 50, Lamports: 2_000_000_000_000}),
	} {
		if c.AccountsHash() == a.AccountsHash() {
			t.Errorf("%s: same hash", name)
		}
	}
	// One lamport moved changes it; moved back, it is as before.
	for _, x := range b.accounts {
		if x.Lamports > 1 && !x.Executable {
			x.Lamports--
			if a.AccountsHash() == b.AccountsHash() {
				t.Fatal("a changed balance left the hash as it was")
			}
			x.Lamports++
			break
		}
	}
	if a.AccountsHash() != b.AccountsHash() {
		t.Fatal("the hash depends on more than the accounts")
	}
}
