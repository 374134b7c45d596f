package banking_test

import (
	"testing"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/txview"
)

func TestReservedKeys(t *testing.T) {
	keys := banking.ReservedKeys()
	if len(keys) != 31 {
		t.Fatalf("%d reserved keys, want Agave's 31", len(keys))
	}
	seen := map[banking.Pubkey]bool{}
	for i, k := range keys {
		if seen[k] {
			t.Errorf("%s listed twice", banking.ReservedNames[i])
		}
		seen[k] = true
		if base58.Encode(k[:]) != banking.ReservedNames[i] {
			t.Errorf("key %d encodes as %s, want %s", i, base58.Encode(k[:]), banking.ReservedNames[i])
		}
		if !banking.IsReserved(&k) {
			t.Errorf("%s not reserved", banking.ReservedNames[i])
		}
	}
	for _, c := range []struct {
		name string
		key  banking.Pubkey
		want bool
	}{
		{"system program", txview.SystemProgram, true},
		{"compute budget", txview.ComputeBudgetProgram, true},
		{"vote", txview.VoteProgram, true},
		{"ed25519", txview.Ed25519Program, true},
		{"secp256k1", txview.Secp256k1Program, true},
		{"loader v4", txview.LoaderV4Program, true},
		{"native loader", banking.NativeLoader, true},
		{"memo (an ordinary sBPF program)", txview.MemoProgram, false},
		{"incinerator (not on Agave's list)", banking.Incinerator, false},
		{"a wallet", banktest.Pub(0), false},
		{"sysvar first byte, other key", banking.Pubkey{0x06, 0xa7}, false},
	} {
		if got := banking.IsReserved(&c.key); got != c.want {
			t.Errorf("%s: banking.IsReserved %v, want %v", c.name, got, c.want)
		}
	}
	for _, k := range txview.BuiltinPrograms() {
		if !banking.IsReserved(&k) {
			t.Errorf("builtin %s not reserved", base58.Encode(k[:]))
		}
	}
	if n := testing.AllocsPerRun(100, func() { banking.IsReserved(&keys[5]) }); n != 0 {
		t.Errorf("banking.IsReserved allocates %v", n)
	}
}
