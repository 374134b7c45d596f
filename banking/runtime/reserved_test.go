package runtime

import (
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/txview"
)

// TestIsWritable: the demotion Agave's SanitizedMessage::is_writable
// applies: reserved keys, and invoked programs unless the upgradeable
// loader is among the keys.
func TestIsWritable(t *testing.T) {
	clock := clockSysvar
	payer := banktest.FreshKey(1)
	memoW := txview.AccountMeta{Key: txview.MemoProgram, Writable: true}
	for _, c := range []struct {
		name string
		ixs  []txview.Ix
		key  banking.Pubkey
		want bool
	}{
		{"payer", []txview.Ix{txview.Transfer(txview.PublicKey(payer), clock, 1)}, txview.PublicKey(payer), true},
		{"recipient", []txview.Ix{txview.Transfer(txview.PublicKey(payer), banktest.Pub(1), 1)}, banktest.Pub(1), true},
		{"reserved recipient", []txview.Ix{txview.Transfer(txview.PublicKey(payer), clock, 1)}, clock, false},
		{"invoked program asked writable", []txview.Ix{{Program: txview.MemoProgram, Accounts: []txview.AccountMeta{memoW}}}, txview.MemoProgram, false},
		{"invoked program with the upgradeable loader present", []txview.Ix{{Program: txview.MemoProgram,
			Accounts: []txview.AccountMeta{memoW, {Key: txview.BPFLoaderUpgradeableProgram}}}}, txview.MemoProgram, true},
		{"the upgradeable loader itself, asked writable", []txview.Ix{{Program: txview.MemoProgram,
			Accounts: []txview.AccountMeta{{Key: txview.BPFLoaderUpgradeableProgram, Writable: true}}}}, txview.BPFLoaderUpgradeableProgram, false},
	} {
		raw := banktest.SignTx(t, banking.Pubkey{1}, payer, c.ixs)
		v, err := txview.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		idx := -1
		for i := 0; i < v.NumStaticKeys(); i++ {
			if *v.StaticKey(i) == c.key {
				idx = i
			}
		}
		if idx < 0 {
			t.Fatalf("%s: key not in the transaction", c.name)
		}
		if !v.IsWritable(idx) {
			t.Fatalf("%s: not requested writable: the case tests nothing", c.name)
		}
		if got := banking.IsWritable(v, idx); got != c.want {
			t.Errorf("%s: banking.IsWritable %v, want %v (requested %v)", c.name, got, c.want, v.IsWritable(idx))
		}
		if got := ShapeOf(v).Writable(v, nil)&(1<<idx) != 0; got != c.want {
			t.Errorf("%s: the scheduler's writability %v, want %v", c.name, got, c.want)
		}
	}
}

// BenchmarkDemotedWritable is the admission's writability of a transfer
// with three compute-budget instructions (what tpu bench banking sends):
// a reserved-key check per account key.
func BenchmarkDemotedWritable(b *testing.B) {
	for _, c := range []struct {
		name string
		to   banking.Pubkey
	}{
		{"to=wallet", banktest.Pub(1)},
		{"to=sysvar", clockSysvar},
	} {
		b.Run(c.name, func(b *testing.B) {
			raw := banktest.TransferTx(b, banking.Pubkey{1}, banktest.Key(0), c.to, 1, txview.SetComputeUnitLimit(600), txview.SetComputeUnitPrice(1))
			v, err := txview.Parse(raw)
			if err != nil {
				b.Fatal(err)
			}
			sh := ShapeOf(v)
			for _, impl := range []struct {
				name string
				f    func(txview.View) uint64
			}{
				{"reserved", func(v txview.View) uint64 { return sh.Writable(v, nil) }},
				{"builtins-only", func(v txview.View) uint64 { return builtinOnlyWritable(v, sh.programs) }},
			} {
				b.Run("impl="+impl.name, func(b *testing.B) {
					b.ReportAllocs()
					b.SetBytes(int64(len(raw)))
					var w uint64
					for i := 0; i < b.N; i++ {
						w ^= impl.f(v)
					}
					if w == 1<<63 {
						b.Log(w)
					}
				})
			}
		})
	}
}

// builtinOnlyWritable is the writability tpu had before the reserved
// list (the same first-byte filter, then the builtin programs and the
// native loader): BenchmarkDemotedWritable's reference, run in the same
// process.
func builtinOnlyWritable(v txview.View, programs uint64) uint64 {
	var w uint64
	for i, n := 0, v.NumStaticKeys(); i < n; i++ {
		k := v.StaticKey(i)
		if v.IsWritable(i) && !(builtinFirstBytes[k[0]/64]&(1<<(k[0]%64)) != 0 && (txview.IsBuiltinProgram(k) || *k == banking.NativeLoader)) {
			w |= 1 << i
		}
	}
	return w &^ programs
}

var builtinFirstBytes = func() (set [4]uint64) {
	for _, k := range append(txview.BuiltinPrograms(), banking.NativeLoader) {
		set[k[0]/64] |= 1 << (k[0] % 64)
	}
	return set
}()

// clockSysvar is SysvarC1ock11111111111111111111111111111111, a reserved
// key.
var clockSysvar = banking.Pubkey{0x06, 0xa7, 0xd5, 0x17, 0x18, 0xc7, 0x74, 0xc9, 0x28, 0x56, 0x63, 0x98, 0x69, 0x1d, 0x5e, 0xb6, 0x8b, 0x5e, 0xb8, 0xa3, 0x9b, 0x4b, 0x6d, 0x5c, 0x73, 0x55, 0x5b, 0x21, 0x00, 0x00, 0x00, 0x00}
