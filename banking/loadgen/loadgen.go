package loadgen

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/txview"
)

// ComputeUnits is the unit limit the generated transactions ask for: a
// transfer and three compute-budget instructions, 150 units each.
const ComputeUnits = 600

// Amount returns the lamports transaction i of a load moves.
func (l *Load) Amount(i int) uint64 { return l.cfg.Lamports + uint64(i) }

// Kind is what a generated transaction is meant to provoke.
type Kind uint8

const (
	Valid          Kind = iota // a transfer that executes
	BadSignature               // a signature byte flipped: discarded by sigverify
	Duplicate                  // the same bytes as an earlier valid one: deduplicated
	Malformed                  // truncated: does not parse
	StaleBlockhash             // signed over a blockhash the bank never had
	UnfundedPayer              // signed by an account with no lamports
	numKinds
)

var kindNames = [...]string{"valid", "bad_signature", "duplicate", "malformed", "stale_blockhash", "unfunded_payer"}

func (k Kind) String() string { return kindNames[k] }

// Config configures a load.
type Config struct {
	// Seed and Accounts are the ledger's genesis seed and funded account
	// count: the generator signs for those accounts.
	Seed     string
	Accounts int
	// Keys, when not empty, are the funded accounts to use instead
	// (accounts funded by airdrop, say); Seed and Accounts are then
	// ignored.
	Keys []ed25519.PrivateKey
	// Blockhash is a recent blockhash of the target bank.
	Blockhash [32]byte
	// Refresh, when not nil, gives Build the bank's latest blockhash
	// before each window of RefreshEvery transactions after the first,
	// which are signed over it: a load signed while the bank's slots go
	// by is spread over their blockhashes in the order it is sent, as a
	// client that polls for the latest blockhash (Agave's bench-tps)
	// spreads its own, and the bank's status cache holds about a slot's
	// transactions under each. Without it every transaction uses
	// Blockhash, and the status cache keeps the whole load under that
	// one hash: a table of a million entries, each probe a cache miss.
	Refresh func() ([32]byte, error)
	// RefreshEvery is the window for Refresh. Zero means RefreshWindow.
	RefreshEvery int
	// Count is the number of transactions to build.
	Count int
	// Contention shapes the recipients: ContentionNone (the zero value)
	// gives each transaction its own payer and recipient, as far as the
	// accounts go; ContentionSameBatchOnly one recipient per BatchSize
	// transactions (a sendmmsg batch); ContentionFull one recipient for
	// all.
	Contention Contention
	// InvalidFraction is the share of transactions that are invalid,
	// spread evenly over the invalid kinds.
	InvalidFraction float64
	// V0Fraction is the share of transactions (of every kind) sent as
	// v0 transactions that load their recipient through the ledger's
	// genesis lookup table (bank.GenesisTable): their recipients are
	// then genesis accounts below 256. Zero sends legacy transactions
	// only. It needs Seed (not Keys): the table is the genesis ledger's.
	V0Fraction float64
	// BatchSize is the datagrams per sendmmsg call. Zero means 64.
	BatchSize int
	// Lamports is the base of each transfer's amount: transaction i
	// moves Lamports + i, which also makes every transaction's bytes
	// distinct. Zero means 1.
	Lamports uint64
	// Size, when not zero, pads every transaction to Size bytes with a
	// memo (pad.go): at most txview.PacketSize, the largest a packet
	// holds. Zero: transfers as they are.
	Size int
	// RandSeed seeds the choice of kinds (reproducible loads).
	RandSeed uint64
	// SignFirst, when above 0, has Build sign only the first SignFirst
	// transactions: the others' Txs are nil until the caller signs them
	// with Sign, with a blockhash fresh when they are about to be sent
	// (a long load signed in windows: tpu gen).
	SignFirst int
	// Progress, when not nil, is called as signing goes.
	Progress func(done, total int)
	// Stop, when not nil, ends the signing early once it is closed (a
	// signal while a large load is signed): Build returns ErrStopped.
	Stop <-chan struct{}
}

// Load is a prepared set of transactions.
type Load struct {
	Txs   [][]byte
	Kinds []Kind
	// V0[i] says whether Txs[i] is a v0 transaction with a lookup.
	V0 []bool
	// Blockhashes is how many blockhashes Build signed over in turn
	// (Config.Refresh; one the bank repeats counts once): 1 without a
	// Refresh.
	Blockhashes int
	cfg         Config
	keys        []ed25519.PrivateKey

	table     [32]byte   // the genesis lookup table, with V0Fraction
	tableKeys [][32]byte // its addresses
}

// RefreshWindow is how many transactions Build signs over one blockhash
// with Config.Refresh by default: at 75k signatures a second on two
// cores, about one 400 ms slot's worth.
const RefreshWindow = 32_768

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("loadgen: invalid config")

// ErrStopped is Build's error when Config.Stop closed before it finished.
var ErrStopped = errors.New("loadgen: stopped while signing")

// Build signs cfg.Count transactions, on every core.
func Build(cfg Config) (*Load, error) {
	if len(cfg.Keys) > 0 {
		cfg.Accounts = len(cfg.Keys)
	}
	if cfg.Accounts < 2 || cfg.Count < 0 || cfg.InvalidFraction < 0 || cfg.InvalidFraction > 1 {
		return nil, fmt.Errorf("%w: need 2 accounts or more, a count, an invalid fraction in [0,1]", ErrConfig)
	}
	if !(cfg.V0Fraction >= 0 && cfg.V0Fraction <= 1) || (cfg.V0Fraction > 0 && len(cfg.Keys) > 0) {
		return nil, fmt.Errorf("%w: a v0 fraction in [0,1], and genesis accounts (not keys) with one", ErrConfig)
	}
	if cfg.Size < 0 || cfg.Size > txview.PacketSize {
		return nil, fmt.Errorf("%w: size %d: 0 or at most %d", ErrConfig, cfg.Size, txview.PacketSize)
	}
	if cfg.Contention > ContentionFull {
		return nil, fmt.Errorf("%w: contention %d", ErrConfig, cfg.Contention)
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 64
	}
	if cfg.Lamports == 0 {
		cfg.Lamports = 1
	}
	keys := cfg.Keys
	if len(keys) == 0 {
		keys = make([]ed25519.PrivateKey, cfg.Accounts)
		parallel(cfg.Accounts, func(i int) { keys[i] = bank.GenesisKey(cfg.Seed, i) })
	}

	l := &Load{Txs: make([][]byte, cfg.Count), Kinds: make([]Kind, cfg.Count), V0: make([]bool, cfg.Count), cfg: cfg, keys: keys}
	rng := rand.New(rand.NewPCG(cfg.RandSeed, 17))
	for i := range l.Kinds {
		if rng.Float64() < cfg.InvalidFraction {
			l.Kinds[i] = Kind(1 + rng.IntN(int(numKinds)-1))
		}
	}
	if cfg.V0Fraction > 0 {
		// A stream of its own, so that the kinds do not depend on it.
		v0rng := rand.New(rand.NewPCG(cfg.RandSeed, 18))
		for i := range l.V0 {
			l.V0[i] = v0rng.Float64() < cfg.V0Fraction
		}
		l.table, l.tableKeys = bank.GenesisTable(cfg.Seed)
	}
	// A duplicate needs an earlier valid transaction to copy.
	firstValid := -1
	for i, k := range l.Kinds {
		if k == Valid {
			firstValid = i
			break
		}
	}
	for i, k := range l.Kinds {
		if k == Duplicate && (firstValid < 0 || firstValid > i) {
			l.Kinds[i] = Malformed // nothing earlier to copy
		}
	}
	signed := cfg.Count
	if cfg.SignFirst > 0 {
		signed = min(signed, cfg.SignFirst)
	}
	var mu sync.Mutex
	done := 0
	var buildErr error
	var stopped atomic.Bool
	window := cfg.RefreshEvery
	if window <= 0 {
		window = RefreshWindow
	}
	if cfg.Refresh == nil {
		window = max(signed, 1)
	}
	bh := cfg.Blockhash
	l.Blockhashes = 1
	for lo := 0; lo < signed && !stopped.Load() && buildErr == nil; lo += window {
		if lo > 0 {
			next, err := cfg.Refresh()
			if err != nil {
				return nil, fmt.Errorf("loadgen: latest blockhash: %w", err)
			}
			if next != bh {
				l.Blockhashes++
			}
			bh = next
		}
		parallel(min(window, signed-lo), func(j int) {
			i := lo + j
			if stopped.Load() {
				return
			}
			if cfg.Stop != nil && i%256 == 0 {
				select {
				case <-cfg.Stop:
					stopped.Store(true)
					return
				default:
				}
			}
			tx, err := l.build(i, bh)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && buildErr == nil {
				buildErr = err
			}
			l.Txs[i] = tx
			done++
			if cfg.Progress != nil && done%50_000 == 0 {
				cfg.Progress(done, cfg.Count)
			}
		})
	}
	if buildErr != nil {
		return nil, buildErr
	}
	if stopped.Load() {
		return nil, ErrStopped
	}
	for i := range signed {
		if l.Kinds[i] == Duplicate {
			l.Txs[i] = l.Txs[l.source(i)] // an earlier valid transaction, sent again
		}
	}
	return l, nil
}

// source returns the valid transaction duplicate i sends again.
func (l *Load) source(i int) int {
	j := i - 1
	for l.Kinds[j] != Valid {
		j--
	}
	return j
}

// Sign signs transactions [from, to) over blockhash bh, on every core,
// and returns them (Txs is left as it is: the caller publishes them as
// it sends). A duplicate there copies its source's bytes: from what Sign
// made, or, for a source before from, from earlier(source) (what the
// caller sent of it).
func (l *Load) Sign(from, to int, bh [32]byte, earlier func(int) []byte) ([][]byte, error) {
	if from < 0 || to > len(l.Txs) || from > to {
		return nil, fmt.Errorf("%w: sign [%d, %d) of %d", ErrConfig, from, to, len(l.Txs))
	}
	out := make([][]byte, to-from)
	var mu sync.Mutex
	var signErr error
	parallel(to-from, func(k int) {
		tx, err := l.build(from+k, bh)
		if err != nil {
			mu.Lock()
			signErr = err
			mu.Unlock()
		}
		out[k] = tx
	})
	if signErr != nil {
		return nil, signErr
	}
	for k := range out {
		if l.Kinds[from+k] == Duplicate {
			if j := l.source(from + k); j >= from {
				out[k] = out[j-from]
			} else {
				out[k] = earlier(j)
			}
		}
	}
	return out, nil
}

// build makes transaction i over blockhash bh (a duplicate as the valid
// transaction it would be: the caller copies its source over it).
func (l *Load) build(i int, blockhash [32]byte) ([]byte, error) {
	cfg, keys := l.cfg, l.keys
	n := len(keys)
	from := i % n
	var to int
	switch cfg.Contention {
	case ContentionFull:
		to = 0
		if from == 0 {
			from = 1
		}
	case ContentionSameBatchOnly:
		to = (i / cfg.BatchSize) % n
		if from == to {
			from = (from + 1) % n
		}
	default:
		to = (i + n/2) % n
		if to == from {
			to = (from + 1) % n
		}
	}
	if l.V0[i] {
		// The recipient must be in the genesis table (and funded).
		if m := min(n, bank.TableMaxAddresses); to >= m {
			to %= m
			if to == from {
				to = (to + 1) % m
			}
		}
	}
	payer := keys[from]
	bh := blockhash
	switch l.Kinds[i] {
	case StaleBlockhash:
		bh = [32]byte{0x5a, byte(i), byte(i >> 8), byte(i >> 16)}
	case UnfundedPayer:
		var seed [32]byte
		seed[0], seed[1], seed[2], seed[3] = 0xee, byte(i), byte(i>>8), byte(i>>16)
		payer = ed25519.NewKeyFromSeed(seed[:])
	}
	pub := txview.PublicKey(payer)
	m := txview.Message{
		Payer:     pub,
		Blockhash: bh,
		Instructions: []txview.Ix{
			txview.Transfer(pub, txview.PublicKey(keys[to]), cfg.Lamports+uint64(i)),
			// What a well-behaved client asks for: the units it needs
			// (four builtin instructions, 150 each) and a small
			// loaded-data limit, so that its cost is about 2,000 units
			// rather than 20,000, and a price that varies.
			txview.SetComputeUnitLimit(ComputeUnits),
			txview.SetComputeUnitPrice(uint64(i%7) * 1000),
			txview.SetLoadedAccountsDataSizeLimit(32 * 1024),
		},
	}
	if l.V0[i] {
		m.Version = txview.V0
		m.Tables = []txview.LookupTable{{Key: l.table, Addresses: l.tableKeys}}
	}
	msg, err := padded(&m, cfg.Size)
	if err != nil {
		return nil, err
	}
	tx, err := txview.SignMessage(msg, payer)
	if err != nil {
		return nil, err
	}
	switch l.Kinds[i] {
	case BadSignature:
		tx[1+i%64] ^= 0x40
	case Malformed:
		tx = tx[:len(tx)-1-i%40]
	}
	return tx, nil
}

// AccountKey returns account index i of v, a transaction of this load:
// a static key, or an address its lookup loads from the genesis table.
func (l *Load) AccountKey(v txview.View, i int) [32]byte {
	n := v.NumStaticKeys()
	if i < n {
		return *v.StaticKey(i)
	}
	it := v.Lookups()
	lk, _ := it.Next() // the load's v0 transactions have one lookup
	j := i - n
	if j >= len(lk.Writable) {
		j -= len(lk.Writable)
		return l.tableKeys[lk.Readonly[j]]
	}
	return l.tableKeys[lk.Writable[j]]
}

// Expected returns how many transactions of each kind the load holds.
func (l *Load) Expected() map[Kind]int {
	out := map[Kind]int{}
	for _, k := range l.Kinds {
		out[k]++
	}
	return out
}
