package banking

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tpugo/tpu/txview"
)

// MaxProcessingAge is how many slots old a recent blockhash may be:
// Solana's MAX_PROCESSING_AGE.
const MaxProcessingAge = 150

// A slot's cost limits (Agave cost-model block_cost_limits.rs).
const (
	// DefaultBlockCostLimit is MAX_BLOCK_UNITS: the most compute units a
	// block may hold.
	DefaultBlockCostLimit = 60_000_000
	// DefaultAccountCostLimit is MAX_WRITABLE_ACCOUNT_UNITS: the most
	// compute units the transactions writing one account may use in a
	// block.
	DefaultAccountCostLimit = 12_000_000
)

// Config configures a Bank.
type Config struct {
	// Dir is the ledger directory: created with a genesis on first use,
	// resumed from its last committed slot afterwards. Empty keeps the
	// ledger in memory (tests, benchmarks).
	Dir string
	// Sync is the commit mode; the zero value fsyncs every slot.
	Sync SyncMode
	// Genesis describes a new ledger; ignored when resuming, except that
	// its seed must match the ledger's.
	Genesis GenesisConfig
	// BlockCostLimit is the most compute units a slot may hold. Zero
	// means DefaultBlockCostLimit (60M).
	BlockCostLimit uint64
	// AccountCostLimit is the most compute units the transactions writing
	// one account may use in a slot. Zero means DefaultAccountCostLimit
	// (12M).
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

	fs vfs.FS // tests: the ledger's file system (nil: the OS's)
}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("banking: invalid config")

// Validate reports a configuration Open would reject.
func (c Config) Validate() error {
	if err := c.Genesis.Validate(); err != nil {
		return err
	}
	if c.Sync > NoSync {
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
	store    *store
	accounts map[Pubkey]*Account

	slot       uint64          // the working slot: last committed + 1
	hashes     []SlotRecord    // committed slots still in the blockhash window, oldest first
	slotOfHash map[Hash]uint64 // blockhash -> slot, for the age check
	status     statusCache
	burned     uint64     // lamports burned since genesis
	tables     tableIndex // the lookup tables, for the scheduler's admission (lookup.go)

	// The working slot's changes.
	dirty      []*Account
	statuses   []byte // the slot's status value, built as transactions finish
	history    []byte // the slot's transaction history (history.go)
	slotRecord SlotRecord
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
	} else if cfg.fs != nil {
		if err := cfg.fs.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStore, err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	st, err := openStore(storeConfig{dir: dir, sync: cfg.Sync, inMemory: inMemory, reset: cfg.Reset, logger: cfg.Logger, fs: cfg.fs})
	if err != nil {
		return nil, err
	}
	b := &Bank{cfg: cfg, store: st, accounts: map[Pubkey]*Account{}, slotOfHash: map[Hash]uint64{}, status: newStatusCache(), tables: tableIndex{},
		statuses: make([]byte, 0, 1<<20)}
	last, burned, seed, found, err := st.readMeta()
	if err == nil {
		if !found {
			err = b.genesis()
		} else if seed != cfg.Genesis.Seed {
			err = fmt.Errorf("%w: ledger %s was made with genesis seed %q, not %q", ErrConfig, cfg.Dir, seed, cfg.Genesis.Seed)
		} else {
			b.burned = burned
			if b.cfg.Genesis.BlockhashSeed, err = st.readBlockhashSeed(); err == nil {
				err = b.load(last)
			}
		}
	}
	if err != nil {
		st.close()
		return nil, err
	}
	b.collector = b.resolve(txview.PublicKey(CollectorKey(cfg.Genesis.Seed)))
	return b, nil
}

// Genesis returns the genesis the ledger was made from, BlockhashSeed
// included (the random one a new ledger drew, when none was given), so
// that a recording of its traffic can rebuild the same bank. A ledger
// made before the seed was kept says "" there.
func (b *Bank) Genesis() GenesisConfig { return b.cfg.Genesis }

// genesis writes slot 0: the genesis accounts and blockhash.
func (b *Bank) genesis() error {
	batch := b.store.db.NewBatch()
	defer batch.Close()
	for _, a := range genesisAccounts(b.cfg.Genesis) {
		a.onDisk = true
		b.accounts[a.key] = a
		b.tables.note(a)
		batch.Set(append([]byte{prefixAccount}, a.key[:]...), a.appendEncoding(nil), nil)
	}
	if b.cfg.Genesis.BlockhashSeed == "" {
		seed, err := randomBlockhashSeed()
		if err != nil {
			return err
		}
		b.cfg.Genesis.BlockhashSeed = seed
	}
	bh := genesisBlockhash(b.cfg.Genesis)
	batch.Set([]byte(keyBlockhashSeed), []byte(b.cfg.Genesis.BlockhashSeed), nil)
	rec := SlotRecord{Slot: 0, Blockhash: bh}
	batch.Set(slotKey(0), rec.encode(), nil)
	batch.Set([]byte(keyMeta), b.encodeMeta(0), nil)
	if err := batch.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("%w: write genesis: %w", ErrStore, err)
	}
	if err := b.store.failure(); err != nil {
		return err
	}
	b.register(rec)
	b.slot = 1
	return nil
}

func (b *Bank) encodeMeta(slot uint64) []byte {
	m := binary.LittleEndian.AppendUint64(nil, slot)
	m = binary.LittleEndian.AppendUint64(m, b.burned)
	return append(m, b.cfg.Genesis.Seed...)
}

// load reads a ledger whose last committed slot is last.
func (b *Bank) load(last uint64) error {
	err := b.store.scan([]byte{prefixAccount}, func(k, v []byte) error {
		if len(k) != 33 {
			return fmt.Errorf("%w: malformed account key", ErrStore)
		}
		a, err := decodeAccount(Pubkey(k[1:]), v)
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
	for s := first; s <= last; s++ {
		v, err := b.store.get(slotKey(s))
		if err != nil {
			return err
		}
		if v == nil {
			return fmt.Errorf("%w: slot %d missing below last committed slot %d", ErrStore, s, last)
		}
		rec, err := decodeSlotRecord(s, v)
		if err != nil {
			return err
		}
		b.register(rec)
	}
	// Statuses of transactions whose blockhash is still valid.
	for s := first; s <= last && err == nil; s++ {
		var v []byte
		if v, err = b.store.slotStatuses(s); err == nil {
			err = eachStatus(v, func(sig *[64]byte, st Status, h Hash) error {
				if hs, valid := b.slotOfHash[h]; valid {
					c := b.status.forHash(h, hs)
					if pos, _, seen := c.find(sig); !seen {
						c.insert(pos, statusEntry{Status: st})
					}
				}
				return nil
			})
		}
	}
	b.slot = last + 1
	b.store.committed.Store(last)
	b.store.durable.Store(last)
	b.store.visible.Store(last)
	return err
}

// register adds a committed slot's blockhash to the window and drops what
// fell out of it.
func (b *Bank) register(rec SlotRecord) {
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
func (b *Bank) Close() error { return b.store.close() }

// DurableSlot returns the last slot fsynced to disk: no crash of the
// process or the machine loses it (see SyncMode). It is the committed slot
// with SyncEachSlot, and may trail it by up to NoSyncInterval with NoSync.
// It is safe for concurrent use.
func (b *Bank) DurableSlot() uint64 { return b.store.durable.Load() }

// Err returns the ledger's first failure (a commit that failed, a Pebble
// background error such as a full or read-only disk, corruption Pebble
// found), or nil while it is healthy. After a failure the bank commits no
// more slots. It is safe for concurrent use.
func (b *Bank) Err() error { return b.store.failure() }

// Slot returns the working slot.
func (b *Bank) Slot() uint64 { return b.slot }

// CommittedSlot returns the last slot durable on disk (with NoSync: handed
// to the operating system). It is safe for concurrent use.
func (b *Bank) CommittedSlot() uint64 { return b.store.committed.Load() }

// VisibleSlot returns the newest slot whose ledger writes a reader
// (CommittedAccount, SlotStatuses) may already see: CommittedSlot, or the
// slot being committed after it, whose batch lands all at once.
func (b *Bank) VisibleSlot() uint64 { return b.store.visible.Load() }

// OnCommit registers f to be called, on the committer goroutine, after
// each slot is committed.
func (b *Bank) OnCommit(f func(SlotRecord)) { b.store.onCommit(f) }

// LatestBlockhash returns the blockhash of the last completed slot, the
// one clients should use.
func (b *Bank) LatestBlockhash() Hash { return b.hashes[len(b.hashes)-1].Blockhash }

// Blockhashes returns the blockhash window, oldest first; the caller owns
// the slice.
func (b *Bank) Blockhashes() []SlotRecord { return append([]SlotRecord(nil), b.hashes...) }

// blockhashSlot returns the slot of a blockhash still in the window.
func (b *Bank) blockhashSlot(h *Hash) (uint64, bool) {
	s, ok := b.slotOfHash[*h]
	return s, ok
}

// lookup returns the account at key, or nil.
func (b *Bank) lookup(key *Pubkey) *Account { return b.accounts[*key] }

// resolve returns the account at key, adding an empty one (not yet
// existing: no lamports) if there is none. An empty account left empty is
// dropped again when the slot ends.
func (b *Bank) resolve(key Pubkey) *Account {
	a := b.accounts[key]
	if a == nil {
		a = &Account{key: key, Owner: SystemProgram}
		b.accounts[key] = a
		b.markDirty(a)
	}
	return a
}

// Account returns a copy of the account at key and whether it exists. Call
// it from the scheduler's goroutine, or while nothing executes.
func (b *Bank) Account(key Pubkey) (Account, bool) {
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
func (b *Bank) Status(h Hash, sig *[64]byte) (Status, bool) {
	e, ok := b.status.get(h, sig)
	if !ok || e.pending {
		return Status{}, false
	}
	return e.Status, true
}

// CommittedAccount reads an account as of the last committed slot from
// the ledger. It is safe for concurrent use.
func (b *Bank) CommittedAccount(key Pubkey) (Account, bool, error) {
	v, err := b.store.get(append([]byte{prefixAccount}, key[:]...))
	if err != nil || v == nil {
		return Account{key: key}, false, err
	}
	a, err := decodeAccount(key, v)
	if err != nil {
		return Account{key: key}, false, err
	}
	return *a, a.Exists(), nil
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

// recordExecuted books an executed transaction (ok or failed) into the
// working slot: its status, its fee.
func (b *Bank) recordExecuted(sig *[64]byte, blockhash Hash, st Status, fee Fee) {
	if cap(b.statuses)-len(b.statuses) < 64+statusRecordLen {
		// Double: a slot's statuses run to megabytes, and append's
		// gentler growth of large slices copies (and faults in) far more.
		b.statuses = append(make([]byte, 0, 2*cap(b.statuses)), b.statuses...)
	}
	b.statuses = appendStatus(append(b.statuses, sig[:]...), st, blockhash)
	b.slotRecord.Transactions++
	b.slotRecord.FeesBurned += fee.Burned()
	b.slotRecord.Reward += fee.Reward()
}

// endSlot commits the working slot, which must have nothing executing:
// the collector is credited, and the changed accounts, the statuses and
// the slot record go to disk in one batch (asynchronously: CommittedSlot
// tells when it is durable). Then the slot's blockhash joins the window
// and the next slot begins. It returns the record of the ended slot.
func (b *Bank) endSlot() (SlotRecord, error) {
	if err := b.store.failure(); err != nil {
		return SlotRecord{}, err
	}
	rec := b.slotRecord
	rec.Slot = b.slot
	rec.Blockhash = nextBlockhash(b.LatestBlockhash(), b.slot)
	// Fee distribution: the leader's share goes to the collector unless
	// it would leave the collector rent-paying; then it is burned, as
	// Agave does.
	if rec.Reward > 0 {
		c := b.collector
		if rentTransitionAllowed(c.Lamports, c.Lamports+rec.Reward, len(c.Data), len(c.Data)) {
			c.Lamports += rec.Reward
			b.markDirty(c)
		} else {
			rec.FeesBurned += rec.Reward
			rec.Reward = 0
		}
	}
	rec.Incinerated = b.runIncinerator()
	b.burned += rec.FeesBurned + rec.Incinerated

	c := &slotCommit{record: rec, meta: b.encodeMeta(rec.Slot), statuses: b.statuses, time: time.Now().Unix()}
	if len(b.history) > 0 {
		// Handed to the committer; a slot with none keeps its buffer.
		c.history = b.history
		b.history = b.store.buffer(cap(c.history))
	}
	c.accounts = b.store.buffer(len(b.dirty) * (37 + accountHeader))
	for _, a := range b.dirty {
		if a.Exists() || a.onDisk {
			c.appendAccount(a)
			a.onDisk = a.Exists()
		}
		if !a.Exists() && a != b.collector && a.pins == 0 {
			delete(b.accounts, a.key) // Solana drops accounts with no lamports
		}
	}
	b.store.enqueue(c)
	clear(b.dirty)
	b.dirty = b.dirty[:0]
	b.statuses = b.store.buffer(cap(c.statuses))
	b.slotRecord = SlotRecord{}
	b.register(rec)
	b.slot++
	return rec, nil
}

// LedgerMemory returns the ledger's Pebble memory now. Safe from any
// goroutine (Pebble's Metrics is); the zero value once the bank is
// closed.
func (b *Bank) LedgerMemory() LedgerMemory {
	return b.store.memory()
}
