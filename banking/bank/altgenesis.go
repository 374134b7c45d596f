package bank

import (
	"crypto/ed25519"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// The genesis lookup table: every new ledger holds one address lookup
// table whose addresses are those of genesis accounts 0 to 255 (whether
// or not the ledger funds that many), so that a load
// generator in another process can send v0 transactions that load their
// recipients through it without creating a table first. Its authority's
// key derives from the seed:
//
//	table authority: ed25519 key from seed SHA-256("tpu-genesis-table-authority-v1" || Seed)
//
// and the table's address is the lookup table program's derivation for
// that authority and slot 0. It is active from slot 1 on, like a table
// created and extended in slot 0.

// GenesisTableAuthority returns the key of the genesis lookup table's
// authority for a seed ("" means "tpu").
func GenesisTableAuthority(seed string) ed25519.PrivateKey {
	return derive("tpu-genesis-table-authority-v1", GenesisConfig{Seed: seed}.withDefaults().Seed, 0, false)
}

// GenesisTable returns the address of the genesis lookup table for a seed
// and its addresses, in order (the caller owns the slice).
func GenesisTable(seed string) (banking.Pubkey, []banking.Pubkey) {
	seed = GenesisConfig{Seed: seed}.withDefaults().Seed
	k, _ := LookupTableAddress(txview.PublicKey(GenesisTableAuthority(seed)), 0)
	addrs := make([]banking.Pubkey, TableMaxAddresses)
	for i := range addrs {
		addrs[i] = txview.PublicKey(GenesisKey(seed, i))
	}
	return k, addrs
}

// genesisTable returns the genesis lookup table's account.
func genesisTable(g GenesisConfig) *Account {
	k, addrs := GenesisTable(g.Seed)
	d := make([]byte, TableMetaSize, TableMetaSize+32*len(addrs))
	PutMeta(d, NewTableMeta(txview.PublicKey(GenesisTableAuthority(g.Seed))))
	for _, a := range addrs {
		d = append(d, a[:]...)
	}
	return &Account{key: k, Lamports: RentExemptMinimum(len(d)), Owner: banking.LookupTableProgram, Data: d}
}
