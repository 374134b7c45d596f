package runtime

import (
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/txview"
)

// TestLoadedSize checks the count itself: data, the 64-byte base, missing
// accounts, and the 8,248 bytes per address lookup table.
func TestLoadedSize(t *testing.T) {
	bh := banking.Pubkey{1}
	payer := banktest.FreshKey(1)
	data := &bank.Account{Lamports: 1, Owner: banking.SystemProgram, Data: make([]byte, 1000)}
	for _, c := range []struct {
		name     string
		msg      txview.Message
		accounts []*bank.Account
		want     uint64
	}{
		{"payer, account with data, missing, program",
			txview.Message{Payer: txview.PublicKey(payer), Blockhash: bh, Instructions: []txview.Ix{{Program: txview.MemoProgram,
				Accounts: []txview.AccountMeta{{Key: banking.Pubkey{7}}, {Key: banking.Pubkey{8}}}}}},
			[]*bank.Account{{Lamports: 1}, data, {}, {Lamports: 1, Executable: true}},
			64 + (64 + 1000) + 0 + 64},
		{"a lookup table",
			txview.Message{Version: txview.V0, Payer: txview.PublicKey(payer), Blockhash: bh,
				Instructions: []txview.Ix{{Program: txview.MemoProgram, Accounts: []txview.AccountMeta{{Key: banking.Pubkey{0xaa}}}}},
				Tables:       []txview.LookupTable{{Key: banking.Pubkey{0xbb}, Addresses: []banking.Pubkey{{0xaa}}}}},
			[]*bank.Account{{Lamports: 1}, {Lamports: 1, Executable: true}},
			LookupTableBaseSize + 64 + 64},
	} {
		raw, err := c.msg.Sign(payer)
		if err != nil {
			t.Fatal(err)
		}
		v, err := txview.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if v.NumStaticKeys() != len(c.accounts) {
			t.Fatalf("%s: %d static keys, test gives %d accounts", c.name, v.NumStaticKeys(), len(c.accounts))
		}
		tx := &Tx{View: v, Accounts: c.accounts, Budget: txview.ComputeBudget{LoadedAccountsDataSizeLimit: uint32(c.want)}}
		if got, ok := loadedSize(tx); got != c.want || !ok {
			t.Errorf("%s: %d (within %v), want %d", c.name, got, ok, c.want)
		}
		tx.Budget.LoadedAccountsDataSizeLimit--
		if _, ok := loadedSize(tx); ok {
			t.Errorf("%s: within a limit one byte short", c.name)
		}
	}
}
