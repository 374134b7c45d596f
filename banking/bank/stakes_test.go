package bank

import (
	"encoding/binary"
	"maps"
	"math"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// TestGenesisValidators: a ledger made with genesis validators holds, for
// each, a vote account naming its identity and a stake account
// delegating its stake there in Agave's layouts; StakedNodes reads the
// stakes back by identity, on the new ledger and on the reopened one.
func TestGenesisValidators(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), Genesis: GenesisConfig{Seed: testSeed, Accounts: 4, Validators: 3, ValidatorStake: 5_000_000_000}}
	want := map[banking.Pubkey]uint64{}
	for i := range 3 {
		want[txview.PublicKey(ValidatorKey(testSeed, i))] = 5_000_000_000
	}
	b := openBank(t, cfg)
	if got := b.StakedNodes(); !maps.Equal(got, want) {
		t.Fatalf("new ledger: staked nodes %v, want %v", got, want)
	}
	// The layouts, field by field at Agave's offsets.
	for i := range 3 {
		id := txview.PublicKey(ValidatorKey(testSeed, i))
		vote, ok := b.Account(VoteAccount(testSeed, i))
		if !ok || vote.Owner != banking.VoteProgram || len(vote.Data) != 3762 || vote.Lamports != RentExemptMinimum(3762) {
			t.Fatalf("validator %d: vote account %v owner %x, %d bytes, %d lamports", i, ok, vote.Owner[:4], len(vote.Data), vote.Lamports)
		}
		if binary.LittleEndian.Uint32(vote.Data) != 2 || banking.Pubkey(vote.Data[4:36]) != id {
			t.Fatalf("validator %d: vote state version %d, node %x", i, binary.LittleEndian.Uint32(vote.Data), vote.Data[4:8])
		}
		st, ok := b.Account(StakeAccount(testSeed, i))
		if !ok || st.Owner != banking.StakeProgram || len(st.Data) != 200 || st.Lamports != RentExemptMinimum(200)+5_000_000_000 {
			t.Fatalf("validator %d: stake account %v owner %x, %d bytes, %d lamports", i, ok, st.Owner[:4], len(st.Data), st.Lamports)
		}
		d := st.Data
		u64 := func(at int) uint64 { return binary.LittleEndian.Uint64(d[at:]) }
		// Tag 2 (Stake); Meta: rent_exempt_reserve at 4, staker at 12,
		// withdrawer at 44, lockup at 76..124; Delegation: voter at 124,
		// stake at 156, activation at 164, deactivation at 172, rate at
		// 180; credits_observed at 188; flags at 196.
		if binary.LittleEndian.Uint32(d) != 2 || u64(4) != RentExemptMinimum(200) || banking.Pubkey(d[12:44]) != id ||
			banking.Pubkey(d[124:156]) != VoteAccount(testSeed, i) || u64(156) != 5_000_000_000 ||
			u64(164) != math.MaxUint64 || u64(172) != math.MaxUint64 || math.Float64frombits(u64(180)) != 0.25 {
			t.Fatalf("validator %d: stake state %x", i, d)
		}
	}
	if c, g := b.Capitalization(), GenesisCapitalization(cfg.Genesis); c != g {
		t.Fatalf("capitalization %d, genesis %d", c, g)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBank(t, cfg)
	defer b.Close()
	if got := b.StakedNodes(); !maps.Equal(got, want) {
		t.Fatalf("reopened: staked nodes %v, want %v", got, want)
	}
}

// TestStakedNodes: delegations to one vote account add up; a deactivating
// delegation, one to an account the vote program does not own, one of a
// stake account in another state, and an account not owned by the stake
// program count nothing.
func TestStakedNodes(t *testing.T) {
	b := openBank(t, Config{Genesis: GenesisConfig{Seed: testSeed, Accounts: 2, Validators: 1, ValidatorStake: 100}})
	defer b.Close()
	id := txview.PublicKey(ValidatorKey(testSeed, 0))
	vote := VoteAccount(testSeed, 0)
	key := func(n byte) banking.Pubkey { return banking.Pubkey{0xee, n} }
	stake := func(n byte, to banking.Pubkey, lamports uint64) *Account {
		return &Account{key: key(n), Lamports: 1, Owner: banking.StakeProgram, Data: stakeState(id, to, lamports)}
	}
	b.SetAccount(stake(1, vote, 50)) // counts: 100 + 50
	deactivating := stake(2, vote, 1000)
	binary.LittleEndian.PutUint64(deactivating.Data[172:], 7)
	b.SetAccount(deactivating)
	// A vote-shaped account the vote program does not own.
	b.SetAccount(&Account{key: key(3), Lamports: 1, Owner: banking.SystemProgram, Data: voteState(key(9))})
	b.SetAccount(stake(4, key(3), 1000))
	initialized := stake(5, vote, 1000)
	binary.LittleEndian.PutUint32(initialized.Data, 1)
	b.SetAccount(initialized)
	notStake := stake(6, vote, 1000)
	notStake.Owner = banking.SystemProgram
	b.SetAccount(notStake)
	// A short one, and a delegation to no account at all.
	b.SetAccount(&Account{key: key(7), Lamports: 1, Owner: banking.StakeProgram, Data: []byte{2, 0, 0, 0}})
	b.SetAccount(stake(8, key(99), 1000))
	want := map[banking.Pubkey]uint64{id: 150}
	if got := b.StakedNodes(); !maps.Equal(got, want) {
		t.Fatalf("staked nodes %v, want %v", got, want)
	}
}
