package bank

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/txview"
)

// MaxProcessingAge is how many slots old a recent blockhash may be:
// Solana's MAX_PROCESSING_AGE.
const MaxProcessingAge = 150

// A slot's cost limits, as mainnet-beta enforces them (Agave cost-model
// block_cost_limits.rs and runtime slot_params.rs). Two feature gates
// set them there: raise_account_cu_limit (SIMD-0306: a writable account
// may use 40% of the block), active on every cluster, and
// raise_block_limits_to_100m (SIMD-0286), active on mainnet-beta since
// epoch 1009 (slot 435,888,000, August 2026). Before SIMD-0286 they were
// 60M and 24M; before SIMD-0306, 60M and 12M.
const (
	// DefaultBlockCostLimit is MAX_BLOCK_UNITS_SIMD_0286: the most
	// compute units a block may hold.
	DefaultBlockCostLimit = 100_000_000
	// DefaultAccountCostLimit is 40% of it: the most compute units the
	// transactions writing one account may use in a block.
	DefaultAccountCostLimit = DefaultBlockCostLimit * 4 / 10
)

// Config configures a Bank.
type Config struct {
	// Dir is the ledger directory: created with a genesis on first use,
	// resumed from its last committed slot afterwards. Empty keeps the
	// ledger in memory (tests, benchmarks).
	Dir string
	// Sync is the commit mode; the zero value fsyncs every slot.
	Sync ledger.SyncMode
	// Genesis describes a new ledger; ignored when resuming, except that
	// its seed must match the ledger's.
	Genesis GenesisConfig
	// BlockCostLimit is the most compute units a slot may hold. Zero
	// means DefaultBlockCostLimit (100M).
	BlockCostLimit uint64
	// AccountCostLimit is the most compute units the transactions writing
	// one account may use in a slot. Zero means DefaultAccountCostLimit
	// (40M).
	AccountCostLimit uint64
	// Reset deletes the ledger in Dir before opening it, after taking its
	// lock (so never one another process holds), and only if Dir holds a
	// tpu ledger and nothing else, or nothing (ErrNotLedger otherwise).
	Reset bool
	// NoTxHistory keeps no transaction history: no getTransaction or
	// getSignaturesForAddress for the slots committed meanwhile. The
	// zero value keeps it (history.go: each executed transaction's bytes
	// and meta, and an index per account, in the slot's batch).
	NoTxHistory bool
	// Logger receives the ledger's errors and Pebble's lines (its
	// informational ones at debug level). Nil means slog.Default().
	Logger *slog.Logger

	// FS is the ledger's file system, for tests that make a disk fail;
	// nil means the OS's.
	FS vfs.FS
}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("banking: invalid config")

// Validate reports a configuration Open would reject.
func (c Config) Validate() error {
	if err := c.Genesis.Validate(); err != nil {
		return err
	}
	if c.Sync > ledger.NoSync {
		return fmt.Errorf("%w: sync mode %d", ErrConfig, c.Sync)
	}
	return nil
}

// Bank holds the accounts, the slot clock's state (slot, recent
// blockhashes), the status cache, and the ledger on disk.
//
// A Bank is driven by one goroutine, the scheduler's: none of its methods
// is safe for concurrent use, except that workers mutate the *Account
// values they are handed under the scheduler's locks. Read committed state
// from other goroutines through the ledger (OpenReader).
type Bank struct {
	cfg      Config
	store    *ledger.Store
	accounts map[banking.Pubkey]*Account

	slot       uint64                  // the working slot: last committed + 1
	hashes     []ledger.SlotRecord     // committed slots still in the blockhash window, oldest first
	slotOfHash map[banking.Hash]uint64 // blockhash -> slot, for the age check
	status     statusCache
	burned     uint64     // lamports burned since genesis
	tables     tableIndex // the lookup tables, for the scheduler's admission (lookup.go)

	// The working slot's changes.
	dirty      []*Account
	statuses   []byte // the slot's status value, built as transactions finish
	history    []byte // the slot's transaction history (history.go)
	slotRecord ledger.SlotRecord
	collector  *Account
}

// Open opens the ledger in cfg.Dir, creating it with a genesis on first
// use, and loads its accounts, recent blockhashes and recent statuses.
func Open(cfg Config) (*Bank, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.BlockCostLimit == 0 {
		cfg.BlockCostLimit = DefaultBlockCostLimit
	}
	if cfg.AccountCostLimit == 0 {
		cfg.AccountCostLimit = DefaultAccountCostLimit
	}
	cfg.Genesis = cfg.Genesis.withDefaults()
	dir, inMemory := cfg.Dir, cfg.Dir == ""
	if inMemory {
		dir = "ledger"
	} else if cfg.FS != nil {
		if err := cfg.FS.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: %w", ledger.ErrStore, err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ledger.ErrStore, err)
	}
	st, err := ledger.Open(ledger.Config{Dir: dir, Sync: cfg.Sync, InMemory: inMemory, Reset: cfg.Reset, NoHistory: cfg.NoTxHistory, Logger: cfg.Logger, FS: cfg.FS})
	if err != nil {
		return nil, err
	}
	b := &Bank{cfg: cfg, store: st, accounts: map[banking.Pubkey]*Account{}, slotOfHash: map[banking.Hash]uint64{}, status: newStatusCache(), tables: tableIndex{},
		statuses: make([]byte, 0, 1<<20)}
	last, burned, seed, found, err := st.ReadMeta()
	if err == nil {
		if !found {
			err = b.genesis()
		} else if seed != cfg.Genesis.Seed {
			err = fmt.Errorf("%w: ledger %s was made with genesis seed %q, not %q", ErrConfig, cfg.Dir, seed, cfg.Genesis.Seed)
		} else {
			b.burned = burned
			if b.cfg.Genesis.BlockhashSeed, err = st.ReadBlockhashSeed(); err == nil {
				err = b.load(last)
			}
		}
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	b.collector = b.Resolve(txview.PublicKey(CollectorKey(cfg.Genesis.Seed)))
	return b, nil
}

// Genesis returns the genesis the ledger was made from, BlockhashSeed
// included (the random one a new ledger drew, when none was given), so
// that a recording of its traffic can rebuild the same bank. A ledger
// made before the seed was kept says "" there.
func (b *Bank) Genesis() GenesisConfig { return b.cfg.Genesis }

// genesis writes slot 0: the genesis accounts and blockhash.
func (b *Bank) genesis() error {
	accounts := genesisAccounts(b.cfg.Genesis)
	for _, a := range accounts {
		a.onDisk = true
		b.accounts[a.key] = a
		b.tables.note(a)
	}
	if b.cfg.Genesis.BlockhashSeed == "" {
		seed, err := randomBlockhashSeed()
		if err != nil {
			return err
		}
		b.cfg.Genesis.BlockhashSeed = seed
	}
	rec := ledger.SlotRecord{Slot: 0, Blockhash: genesisBlockhash(b.cfg.Genesis)}
	err := b.store.WriteGenesis(ledger.Genesis{
		Accounts: func(add func(key *banking.Pubkey, enc []byte)) {
			for _, a := range accounts {
				add(&a.key, a.appendEncoding(nil))
			}
		},
		BlockhashSeed: b.cfg.Genesis.BlockhashSeed,
		Record:        rec,
		Meta:          ledger.EncodeMeta(0, b.burned, b.cfg.Genesis.Seed),
		Time:          time.Now().Unix(),
	})
	if err != nil {
		return err
	}
	b.register(rec)
	b.slot = 1
	return nil
}

// load reads a ledger whose last committed slot is last.
func (b *Bank) load(last uint64) error {
	err := b.store.ScanAccounts(func(key *banking.Pubkey, enc []byte) error {
		a, err := DecodeAccount(*key, enc)
		if err != nil {
			return err
		}
		a.onDisk = true
		b.accounts[a.key] = a
		b.tables.note(a)
		return nil
	})
	if err != nil {
		return err
	}
	first := uint64(0)
	if last > MaxProcessingAge {
		first = last - MaxProcessingAge
	}
	window, err := b.store.Window(first, last)
	if err != nil {
		return err
	}
	for _, rec := range window {
		b.register(rec)
	}
	// Statuses of transactions whose blockhash is still valid, and of
	// those processed in the window under a blockhash that is not (nonce
	// transactions, registered at their slot as admission registers
	// them).
	for s := first; s <= last && err == nil; s++ {
		err = b.store.EachStatus(s, func(sig *[64]byte, st ledger.Status, h banking.Hash) error {
			hs, valid := b.slotOfHash[h]
			if !valid {
				hs = st.Slot
			}
			c := b.status.forHash(h, hs)
			if pos, _, seen := c.find(sig); !seen {
				c.insert(pos, statusEntry{Status: st})
			}
			return nil
		})
	}
	b.slot = last + 1
	b.store.Resume(last)
	return err
}

// register adds a committed slot's blockhash to the window and drops what
// fell out of it.
func (b *Bank) register(rec ledger.SlotRecord) {
	b.hashes = append(b.hashes, rec)
	b.slotOfHash[rec.Blockhash] = rec.Slot
	for len(b.hashes) > MaxProcessingAge+1 {
		delete(b.slotOfHash, b.hashes[0].Blockhash)
		b.hashes = b.hashes[1:]
	}
	b.status.prune(b.hashes[0].Slot)
}

// Close waits for queued commits, makes them durable and closes the
// ledger.
func (b *Bank) Close() error { return b.store.Close() }

// DurableSlot returns the last slot fsynced to disk: no crash of the
// process or the machine loses it (see SyncMode). It is the committed slot
// with SyncEachSlot, and may trail it by up to NoSyncInterval with NoSync.
// It is safe for concurrent use.
func (b *Bank) DurableSlot() uint64 { return b.store.DurableSlot() }

// Err returns the ledger's first failure (a commit that failed, a Pebble
// background error such as a full or read-only disk, corruption Pebble
// found), or nil while it is healthy. After a failure the bank commits no
// more slots. It is safe for concurrent use.
func (b *Bank) Err() error { return b.store.Err() }

// Slot returns the working slot.
func (b *Bank) Slot() uint64 { return b.slot }

// CommittedSlot returns the last slot durable on disk (with NoSync: handed
// to the operating system). It is safe for concurrent use.
func (b *Bank) CommittedSlot() uint64 { return b.store.CommittedSlot() }

// VisibleSlot returns the newest slot whose ledger writes a reader
// (CommittedAccount, SlotStatuses) may already see: CommittedSlot, or the
// slot being committed after it, whose batch lands all at once.
func (b *Bank) VisibleSlot() uint64 { return b.store.VisibleSlot() }

// OnCommit registers f to be called, on the committer goroutine, after
// each slot is committed.
func (b *Bank) OnCommit(f func(ledger.SlotRecord)) { b.store.OnCommit(f) }

// Ledger returns the bank's ledger, whose reads (statuses, slot records,
// transaction history) are safe for concurrent use.
func (b *Bank) Ledger() *ledger.Store { return b.store }

// LatestBlockhash returns the blockhash of the last completed slot, the
// one clients should use.
func (b *Bank) LatestBlockhash() banking.Hash { return b.hashes[len(b.hashes)-1].Blockhash }

// Blockhashes returns the blockhash window, oldest first; the caller owns
// the slice.
func (b *Bank) Blockhashes() []ledger.SlotRecord {
	return append([]ledger.SlotRecord(nil), b.hashes...)
}

// BlockhashSlot returns the slot of a blockhash still in the window.
func (b *Bank) BlockhashSlot(h *banking.Hash) (uint64, bool) {
	s, ok := b.slotOfHash[*h]
	return s, ok
}

// Lookup returns the account at key, or nil.
func (b *Bank) Lookup(key *banking.Pubkey) *Account { return b.accounts[*key] }

// Resolve returns the account at key, adding an empty one (not yet
// existing: no lamports) if there is none. An empty account left empty is
// dropped again when the slot ends.
func (b *Bank) Resolve(key banking.Pubkey) *Account {
	a := b.accounts[key]
	if a == nil {
		a = &Account{key: key, Owner: banking.SystemProgram}
		b.accounts[key] = a
		b.markDirty(a)
	}
	return a
}

// Account returns a copy of the account at key and whether it exists. Call
// it from the scheduler's goroutine, or while nothing executes.
func (b *Bank) Account(key banking.Pubkey) (Account, bool) {
	a := b.accounts[key]
	if a == nil || !a.Exists() {
		return Account{key: key}, false
	}
	c := Account{Lamports: a.Lamports, Owner: a.Owner, Executable: a.Executable, key: key}
	c.Data = append([]byte(nil), a.Data...)
	return c, true
}

// Status returns the status of a signature processed (or buffered) under
// blockhash h while h is in the window.
func (b *Bank) Status(h banking.Hash, sig *[64]byte) (ledger.Status, bool) {
	e, ok := b.status.get(h, sig)
	if !ok || e.pending {
		return ledger.Status{}, false
	}
	return e.Status, true
}

// Capitalization returns the lamports in all accounts plus those burned
// since genesis: constant for the life of a ledger. Call it while nothing
// executes.
func (b *Bank) Capitalization() uint64 {
	total := b.burned + b.slotRecord.FeesBurned + b.slotRecord.Reward
	for _, a := range b.accounts {
		total += a.Lamports
	}
	return total
}

// GenesisCapitalization returns the lamports a ledger made from g starts
// with.
func GenesisCapitalization(g GenesisConfig) uint64 {
	var total uint64
	for _, a := range genesisAccounts(g) {
		total += a.Lamports
	}
	return total
}

// markDirty records that a changed in the working slot.
func (b *Bank) markDirty(a *Account) {
	if a.dirtySlot != b.slot+1 {
		a.dirtySlot = b.slot + 1
		b.dirty = append(b.dirty, a)
	}
}

// EndSlot commits the working slot, which must have nothing executing:
// the collector is credited, and the changed accounts, the statuses and
// the slot record go to disk in one batch (asynchronously: CommittedSlot
// tells when it is durable). Then the slot's blockhash joins the window
// and the next slot begins. It returns the record of the ended slot.
func (b *Bank) EndSlot() (ledger.SlotRecord, error) {
	if err := b.store.Err(); err != nil {
		return ledger.SlotRecord{}, err
	}
	rec := b.slotRecord
	rec.Slot = b.slot
	rec.Blockhash = nextBlockhash(b.LatestBlockhash(), b.slot)
	// Fee distribution: the leader's share goes to the collector unless
	// it would leave the collector rent-paying; then it is burned, as
	// Agave does.
	if rec.Reward > 0 {
		c := b.collector
		if RentTransitionAllowed(c.Lamports, c.Lamports+rec.Reward, len(c.Data), len(c.Data)) {
			c.Lamports += rec.Reward
			rec.CollectorBalance = c.Lamports
			b.markDirty(c)
		} else {
			rec.FeesBurned += rec.Reward
			rec.Reward = 0
		}
	}
	rec.Incinerated = b.runIncinerator()
	b.burned += rec.FeesBurned + rec.Incinerated

	c := b.store.NewSlotCommit(len(b.dirty) * (37 + accountHeader))
	c.Record, c.Statuses, c.Time = rec, b.statuses, time.Now().Unix()
	c.Meta = ledger.EncodeMeta(rec.Slot, b.burned, b.cfg.Genesis.Seed)
	if len(b.history) > 0 {
		// Handed to the committer; a slot with none keeps its buffer.
		c.History = b.history
		b.history = b.store.Buffer(cap(c.History))
	}
	for _, a := range b.dirty {
		if a.Exists() {
			c.EndAccount(a.appendEncoding(c.StartAccount(&a.key)))
		} else if a.onDisk {
			c.AppendDeleted(&a.key)
		}
		a.onDisk = a.Exists()
		if !a.Exists() && a != b.collector && a.pins == 0 {
			delete(b.accounts, a.key) // Solana drops accounts with no lamports
		}
	}
	b.store.Enqueue(c)
	clear(b.dirty)
	b.dirty = b.dirty[:0]
	b.statuses = b.store.Buffer(cap(c.Statuses))
	b.slotRecord = ledger.SlotRecord{}
	b.register(rec)
	b.slot++
	return rec, nil
}
