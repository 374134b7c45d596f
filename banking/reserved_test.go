package banking

import (
	"testing"

	"github.com/mr-tron/base58"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

func TestReservedKeys(t *testing.T) {
	keys := ReservedKeys()
	if len(keys) != 31 {
		t.Fatalf("%d reserved keys, want Agave's 31", len(keys))
	}
	seen := map[Pubkey]bool{}
	for i, k := range keys {
		if seen[k] {
			t.Errorf("%s listed twice", reservedNames[i])
		}
		seen[k] = true
		if base58.Encode(k[:]) != reservedNames[i] {
			t.Errorf("key %d encodes as %s, want %s", i, base58.Encode(k[:]), reservedNames[i])
		}
		if !IsReserved(&k) {
			t.Errorf("%s not reserved", reservedNames[i])
		}
	}
	for _, c := range []struct {
		name string
		key  Pubkey
		want bool
	}{
		{"system program", txview.SystemProgram, true},
		{"compute budget", txview.ComputeBudgetProgram, true},
		{"vote", txview.VoteProgram, true},
		{"ed25519", txview.Ed25519Program, true},
		{"secp256k1", txview.Secp256k1Program, true},
		{"loader v4", txview.LoaderV4Program, true},
		{"native loader", NativeLoader, true},
		{"memo (an ordinary sBPF program)", txview.MemoProgram, false},
		{"incinerator (not on Agave's list)", Incinerator, false},
		{"a wallet", gpub(0), false},
		{"sysvar first byte, other key", Pubkey{0x06, 0xa7}, false},
	} {
		if got := IsReserved(&c.key); got != c.want {
			t.Errorf("%s: IsReserved %v, want %v", c.name, got, c.want)
		}
	}
	for _, k := range txview.BuiltinPrograms() {
		if !IsReserved(&k) {
			t.Errorf("builtin %s not reserved", base58.Encode(k[:]))
		}
	}
	if n := testing.AllocsPerRun(100, func() { IsReserved(&keys[5]) }); n != 0 {
		t.Errorf("IsReserved allocates %v", n)
	}
}

// TestTransferToReserved: a transfer to each reserved key fails with
// ReadonlyLamportChange (the key is demoted to read-only, as Agave's
// SanitizedMessage::is_writable does), and the payer pays only the fee.
func TestTransferToReserved(t *testing.T) {
	keys := ReservedKeys()
	b := openBank(t, Config{Genesis: GenesisConfig{Accounts: len(keys) + 1}})
	defer b.Close()
	s := newScheduler(t, SchedulerConfig{Workers: 2}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	start := lamports(b, gpub(0))
	var txs [][]byte
	for i, k := range keys {
		txs = append(txs, transferTx(t, bh, gkey(i), k, 1_000_000))
	}
	for len(txs) > 0 {
		n := min(len(txs), 16)
		s.Submit(batchOf(t, pool, txs[:n]...))
		txs = txs[n:]
	}
	drain(t, s)
	checkAccounting(t, s)
	for i, k := range keys {
		v, _ := txview.Parse(transferTx(t, bh, gkey(i), k, 1_000_000))
		st, ok := b.Status(bh, v.Signature(0))
		if !ok {
			t.Errorf("%s: no status", reservedNames[i])
			continue
		}
		if got := st.Err.String(); got != "InstructionError(0, ReadonlyLamportChange)" {
			t.Errorf("%s: %s, want InstructionError(0, ReadonlyLamportChange)", reservedNames[i], got)
		}
		if got := lamports(b, gpub(i)); got != start-LamportsPerSignature {
			t.Errorf("%s: payer %d, want %d (fee only)", reservedNames[i], got, start-LamportsPerSignature)
		}
	}
}

// TestReservedReadLocked: two transactions that ask to write the same
// reserved key take read locks on it and run on two workers at once; the
// same two with an ordinary key conflict.
func TestReservedReadLocked(t *testing.T) {
	clock := mustKey("SysvarC1ock11111111111111111111111111111111")
	for _, m := range []Method{Greedy, PrioGraph} {
		for _, c := range []struct {
			name     string
			key      Pubkey
			parallel bool
		}{
			{"reserved", clock, true},
			{"ordinary", gpub(12), false},
		} {
			t.Run(m.String()+"/"+c.name, func(t *testing.T) {
				b := openBank(t, Config{})
				defer b.Close()
				s := newScheduler(t, SchedulerConfig{Method: m, Workers: 2, MaxQueuedBatches: 2, BatchSize: 1}, b)
				pool, _ := packet.NewPool(packet.Config{})
				bh := b.LatestBlockhash()
				x := transferTx(t, bh, gkey(0), c.key, 1_000_000)
				y := transferTx(t, bh, gkey(1), c.key, 1_000_000)
				s.Submit(batchOf(t, pool, x, y))
				s.Schedule()
				parallel := s.workers[0].txs == 1 && s.workers[1].txs == 1
				if parallel != c.parallel {
					t.Errorf("on two workers at once: %v, want %v (workers %d, %d)", parallel, c.parallel, s.workers[0].txs, s.workers[1].txs)
				}
				drain(t, s)
				checkAccounting(t, s)
			})
		}
	}
}

// TestIsWritable: the demotion Agave's SanitizedMessage::is_writable
// applies: reserved keys, and invoked programs unless the upgradeable
// loader is among the keys.
func TestIsWritable(t *testing.T) {
	clock := mustKey("SysvarC1ock11111111111111111111111111111111")
	payer := freshKey(1)
	memoW := txview.AccountMeta{Key: txview.MemoProgram, Writable: true}
	for _, c := range []struct {
		name string
		ixs  []txview.Ix
		key  Pubkey
		want bool
	}{
		{"payer", []txview.Ix{txview.Transfer(txview.PublicKey(payer), clock, 1)}, txview.PublicKey(payer), true},
		{"recipient", []txview.Ix{txview.Transfer(txview.PublicKey(payer), gpub(1), 1)}, gpub(1), true},
		{"reserved recipient", []txview.Ix{txview.Transfer(txview.PublicKey(payer), clock, 1)}, clock, false},
		{"invoked program asked writable", []txview.Ix{{Program: txview.MemoProgram, Accounts: []txview.AccountMeta{memoW}}}, txview.MemoProgram, false},
		{"invoked program with the upgradeable loader present", []txview.Ix{{Program: txview.MemoProgram,
			Accounts: []txview.AccountMeta{memoW, {Key: txview.BPFLoaderUpgradeableProgram}}}}, txview.MemoProgram, true},
		{"the upgradeable loader itself, asked writable", []txview.Ix{{Program: txview.MemoProgram,
			Accounts: []txview.AccountMeta{{Key: txview.BPFLoaderUpgradeableProgram, Writable: true}}}}, txview.BPFLoaderUpgradeableProgram, false},
	} {
		raw := signTx(t, Pubkey{1}, payer, c.ixs)
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
		if got := IsWritable(v, idx); got != c.want {
			t.Errorf("%s: IsWritable %v, want %v (requested %v)", c.name, got, c.want, v.IsWritable(idx))
		}
		if got := shapeOf(v).writable(v, nil)&(1<<idx) != 0; got != c.want {
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
		to   Pubkey
	}{
		{"to=wallet", gpub(1)},
		{"to=sysvar", mustKey("SysvarC1ock11111111111111111111111111111111")},
	} {
		b.Run(c.name, func(b *testing.B) {
			raw := transferTx(b, Pubkey{1}, gkey(0), c.to, 1, txview.SetComputeUnitLimit(600), txview.SetComputeUnitPrice(1))
			v, err := txview.Parse(raw)
			if err != nil {
				b.Fatal(err)
			}
			sh := shapeOf(v)
			for _, impl := range []struct {
				name string
				f    func(txview.View) uint64
			}{
				{"reserved", func(v txview.View) uint64 { return sh.writable(v, nil) }},
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
		if v.IsWritable(i) && !(builtinFirstBytes[k[0]/64]&(1<<(k[0]%64)) != 0 && (txview.IsBuiltinProgram(k) || *k == NativeLoader)) {
			w |= 1 << i
		}
	}
	return w &^ programs
}

var builtinFirstBytes = func() (set [4]uint64) {
	for _, k := range append(txview.BuiltinPrograms(), NativeLoader) {
		set[k[0]/64] |= 1 << (k[0] % 64)
	}
	return set
}()
