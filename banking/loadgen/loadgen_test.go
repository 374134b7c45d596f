package loadgen

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"math"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"

	"github.com/tpugo/tpu/packet/mmsg"
	"github.com/tpugo/tpu/txview"
)

const seed = "loadgen-test"

var blockhash = [32]byte{1, 2, 3, 4, 5}

// genesis returns the public keys of the seed's first n genesis accounts,
// mapped to their index.
func genesis(n int) map[[32]byte]int {
	m := make(map[[32]byte]int, n)
	for i := range n {
		m[txview.PublicKey(bank.GenesisKey(seed, i))] = i
	}
	return m
}

// tx is what a test reads back from a generated transaction.
type tx struct {
	view     txview.View
	parseErr error
	verifies bool
	payer    [32]byte
	writes   [][32]byte // writable accounts other than the payer
}

func read(t *testing.T, b []byte) tx {
	t.Helper()
	v, err := txview.Parse(b)
	if err != nil {
		return tx{parseErr: err}
	}
	out := tx{view: v, payer: *v.FeePayer()}
	out.verifies = v.NumSignatures() == 1 && ed25519.Verify(out.payer[:], v.Message(), v.Signature(0)[:])
	for i := 1; i < v.NumStaticKeys(); i++ {
		if v.IsWritable(i) {
			out.writes = append(out.writes, *v.StaticKey(i))
		}
	}
	return out
}

// Build makes Count transactions; the invalid ones are about
// InvalidFraction of them, spread over every invalid kind.
func TestBuildMix(t *testing.T) {
	for _, tc := range []struct {
		count    int
		fraction float64
	}{
		{0, 0.5},
		{1, 0},
		{500, 0},
		{3000, 0.2},
		{3000, 0.5},
	} {
		l, err := Build(Config{Seed: seed, Accounts: 64, Blockhash: blockhash, Count: tc.count, InvalidFraction: tc.fraction, RandSeed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Txs) != tc.count || len(l.Kinds) != tc.count {
			t.Fatalf("count %d: %d transactions, %d kinds", tc.count, len(l.Txs), len(l.Kinds))
		}
		exp := l.Expected()
		total := 0
		for _, n := range exp {
			total += n
		}
		if total != tc.count {
			t.Fatalf("count %d: Expected sums to %d", tc.count, total)
		}
		invalid := tc.count - exp[Valid]
		// A binomial count: 5 standard deviations either side.
		mean := tc.fraction * float64(tc.count)
		sd := 5 * math.Sqrt(float64(tc.count)*tc.fraction*(1-tc.fraction))
		if float64(invalid) < mean-sd || float64(invalid) > mean+sd {
			t.Errorf("count %d, fraction %v: %d invalid, want %.0f ± %.0f", tc.count, tc.fraction, invalid, mean, sd)
		}
		if tc.fraction == 0 {
			continue
		}
		share := mean / float64(numKinds-1)
		for k := BadSignature; k < numKinds; k++ {
			if n := float64(exp[k]); n < share/2 || n > share*1.5 {
				t.Errorf("count %d, fraction %v: %d %v, want about %.0f", tc.count, tc.fraction, exp[k], k, share)
			}
		}
	}
}

// Every transaction is what its kind says.
func TestBuildKinds(t *testing.T) {
	const accounts = 64
	l, err := Build(Config{Seed: seed, Accounts: accounts, Blockhash: blockhash, Count: 1500, InvalidFraction: 0.6, RandSeed: 11, Lamports: 5})
	if err != nil {
		t.Fatal(err)
	}
	keys := genesis(accounts)
	seen := map[string]int{} // valid transactions' bytes
	for i, b := range l.Txs {
		x := read(t, b)
		switch k := l.Kinds[i]; k {
		case Valid, BadSignature, StaleBlockhash, UnfundedPayer:
			if x.parseErr != nil {
				t.Fatalf("tx %d (%v): %v", i, k, x.parseErr)
			}
			if _, genesisPayer := keys[x.payer]; genesisPayer != (k != UnfundedPayer) {
				t.Errorf("tx %d (%v): payer is a genesis key: %v", i, k, genesisPayer)
			}
			if x.verifies != (k != BadSignature) {
				t.Errorf("tx %d (%v): signature verifies: %v", i, k, x.verifies)
			}
			if fresh := *x.view.RecentBlockhash() == blockhash; fresh != (k != StaleBlockhash) {
				t.Errorf("tx %d (%v): signed over the given blockhash: %v", i, k, fresh)
			}
			if len(x.writes) != 1 {
				t.Fatalf("tx %d (%v): writes %d accounts besides the payer, want 1", i, k, len(x.writes))
			}
			if _, ok := keys[x.writes[0]]; !ok {
				t.Errorf("tx %d (%v): pays an account that is not a genesis key", i, k)
			}
			if k == Valid {
				if j, dup := seen[string(b)]; dup {
					t.Errorf("tx %d: the same bytes as valid tx %d", i, j)
				}
				seen[string(b)] = i
			}
		case Duplicate:
			j, ok := seen[string(b)]
			if !ok || j >= i {
				t.Errorf("tx %d (duplicate): not the bytes of an earlier valid transaction", i)
			}
		case Malformed:
			if x.parseErr == nil {
				t.Errorf("tx %d (malformed): parses", i)
			}
		default:
			t.Fatalf("tx %d: kind %d", i, k)
		}
	}
	if l.Amount(7) != 12 {
		t.Errorf("Amount(7) = %d, want Lamports + 7 = 12", l.Amount(7))
	}
}

// With a Refresh, each window of RefreshEvery transactions is signed over
// the blockhash Refresh gave before it (the first over Blockhash), in
// order; a stale one keeps its own; duplicates copy their source with its
// blockhash; a failing Refresh fails the build.
func TestBuildRefresh(t *testing.T) {
	const window, count = 50, 230 // five windows, the last short
	hashes := [][32]byte{blockhash}
	refresh := func() ([32]byte, error) {
		h := [32]byte{0x77, byte(len(hashes))}
		if len(hashes) == 3 {
			h = hashes[2] // the bank had no new slot: the same hash again
		}
		hashes = append(hashes, h)
		return h, nil
	}
	l, err := Build(Config{Seed: seed, Accounts: 16, Blockhash: blockhash, Refresh: refresh, RefreshEvery: window,
		Count: count, InvalidFraction: 0.3, RandSeed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(hashes) != 5 {
		t.Fatalf("Refresh called %d times, want 4 (before every window but the first)", len(hashes)-1)
	}
	if l.Blockhashes != 4 {
		t.Errorf("Blockhashes = %d, want 4 (five windows, one repeating its hash)", l.Blockhashes)
	}
	for i, b := range l.Txs {
		k := l.Kinds[i]
		if k == Malformed {
			continue
		}
		want := hashes[i/window]
		if k == Duplicate {
			want = hashes[l.source(i)/window]
		}
		x := read(t, b)
		if got := *x.view.RecentBlockhash(); (got == want) != (k != StaleBlockhash) {
			t.Errorf("tx %d (%v): blockhash %x, window's %x", i, k, got[:4], want[:4])
		}
	}
	one, err := Build(Config{Seed: seed, Accounts: 16, Blockhash: blockhash, Count: count})
	if err != nil || one.Blockhashes != 1 {
		t.Fatalf("without Refresh: %v, %d blockhashes, want 1", err, one.Blockhashes)
	}
	boom := errors.New("bank gone")
	_, err = Build(Config{Seed: seed, Accounts: 16, Blockhash: blockhash, Count: count, RefreshEvery: window,
		Refresh: func() ([32]byte, error) { return [32]byte{}, boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("a failing Refresh: %v, want it wrapped", err)
	}
}

// A load signs for Keys, when given, instead of the genesis accounts.
func TestBuildKeys(t *testing.T) {
	keys := []ed25519.PrivateKey{bank.GenesisKey("other", 0), bank.GenesisKey("other", 1), bank.GenesisKey("other", 2)}
	l, err := Build(Config{Keys: keys, Blockhash: blockhash, Count: 9})
	if err != nil {
		t.Fatal(err)
	}
	own := map[[32]byte]bool{}
	for _, k := range keys {
		own[txview.PublicKey(k)] = true
	}
	for i, b := range l.Txs {
		x := read(t, b)
		if x.parseErr != nil || !x.verifies || !own[x.payer] || !own[x.writes[0]] || x.payer == x.writes[0] {
			t.Errorf("tx %d: parse %v, verifies %v, payer and recipient among the keys and distinct: %v %v %v",
				i, x.parseErr, x.verifies, own[x.payer], own[x.writes[0]], x.payer != x.writes[0])
		}
	}
}

// The contention modes write the accounts they promise.
func TestBuildContention(t *testing.T) {
	const accounts, count, batch = 64, 32, 8
	keys := genesis(accounts)
	for _, c := range []Contention{ContentionNone, ContentionSameBatchOnly, ContentionFull} {
		t.Run("contention="+c.String(), func(t *testing.T) {
			l, err := Build(Config{Seed: seed, Accounts: accounts, Blockhash: blockhash, Count: count, Contention: c, BatchSize: batch})
			if err != nil {
				t.Fatal(err)
			}
			writers := map[[32]byte][]int{} // account -> transactions that write it
			recipients := make([]int, count)
			for i, b := range l.Txs {
				x := read(t, b)
				if x.parseErr != nil || !x.verifies || len(x.writes) != 1 || x.payer == x.writes[0] {
					t.Fatalf("tx %d: not a valid transfer between two accounts", i)
				}
				writers[x.payer] = append(writers[x.payer], i)
				writers[x.writes[0]] = append(writers[x.writes[0]], i)
				recipients[i] = keys[x.writes[0]]
			}
			switch c {
			case ContentionNone:
				// count <= accounts/2: no account is written twice.
				for k, txs := range writers {
					if len(txs) > 1 {
						t.Errorf("account %d written by transactions %v", keys[k], txs)
					}
				}
			case ContentionSameBatchOnly:
				for i := range recipients {
					same := recipients[i] == recipients[i/batch*batch]
					if !same {
						t.Errorf("tx %d pays account %d, its batch's first pays %d", i, recipients[i], recipients[i/batch*batch])
					}
				}
				var firsts []int
				for i := 0; i < count; i += batch {
					firsts = append(firsts, recipients[i])
				}
				if len(slices.Compact(slices.Sorted(slices.Values(firsts)))) != len(firsts) {
					t.Errorf("batches share a recipient: %v", firsts)
				}
			case ContentionFull:
				for i, r := range recipients {
					if r != recipients[0] {
						t.Errorf("tx %d pays account %d, tx 0 pays %d", i, r, recipients[0])
					}
				}
				if n := len(writers[txview.PublicKey(bank.GenesisKey(seed, recipients[0]))]); n != count {
					t.Errorf("the shared account is written by %d transactions, want %d", n, count)
				}
			}
		})
	}
}

// The same RandSeed gives the same load; another gives another mix.
func TestBuildDeterministic(t *testing.T) {
	cfg := Config{Seed: seed, Accounts: 16, Blockhash: blockhash, Count: 400, InvalidFraction: 0.5, RandSeed: 42}
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Kinds, b.Kinds) || !slices.EqualFunc(a.Txs, b.Txs, bytes.Equal) {
		t.Fatal("two builds with one RandSeed differ")
	}
	cfg.RandSeed++
	c, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a.Kinds, c.Kinds) {
		t.Fatal("another RandSeed gives the same kinds")
	}
}

func TestBuildConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Seed: seed, Accounts: 1, Count: 1},
		{Seed: seed, Accounts: 4, Count: -1},
		{Seed: seed, Accounts: 4, Count: 1, InvalidFraction: 1.5},
		{Seed: seed, Accounts: 4, Count: 1, InvalidFraction: -0.1},
		{Seed: seed, Accounts: 4, Count: 1, Contention: ContentionFull + 1},
	} {
		if _, err := Build(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want %v", cfg, err, ErrConfig)
		}
	}
}

// Send sends every transaction, in order, to the target, and paces them
// at Rate: n transactions take at least (n-1)/Rate.
func TestSendRate(t *testing.T) {
	const count, rate = 200, 4000.0
	l, err := Build(Config{Seed: seed, Accounts: 16, Blockhash: blockhash, Count: count})
	if err != nil {
		t.Fatal(err)
	}
	in, got := receiver(t, count)
	res, err := l.Send(SendConfig{Target: in, Rate: rate, BatchSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != count {
		t.Fatalf("sent %d, want %d", res.Sent, count)
	}
	if min := time.Duration(float64(count-1) / rate * float64(time.Second)); res.Elapsed < min {
		t.Errorf("sent %d at %v/s in %v, faster than %v", count, rate, res.Elapsed, min)
	}
	recv := <-got
	if len(recv) != count {
		t.Fatalf("received %d datagrams, want %d", len(recv), count)
	}
	for i, b := range recv {
		if !bytes.Equal(b, l.Txs[i]) {
			t.Fatalf("datagram %d is not transaction %d", i, i)
		}
	}
}

// Without a rate, Send asks Accepting before each batch and stops when
// Stop is closed.
func TestSendAcceptingStop(t *testing.T) {
	const count, batch, allowed = 100, 10, 50
	l, err := Build(Config{Seed: seed, Accounts: 16, Blockhash: blockhash, Count: count})
	if err != nil {
		t.Fatal(err)
	}
	in, got := receiver(t, allowed)
	stop := make(chan struct{})
	var asked []int
	res, err := l.Send(SendConfig{Target: in, BatchSize: batch, Stop: stop, Accepting: func(sent int) bool {
		asked = append(asked, sent)
		if sent >= allowed {
			close(stop)
			return false
		}
		return true
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != allowed {
		t.Fatalf("sent %d, want %d", res.Sent, allowed)
	}
	if want := []int{0, 10, 20, 30, 40, 50}; !slices.Equal(asked, want) {
		t.Errorf("Accepting asked with %v, want %v", asked, want)
	}
	if recv := <-got; len(recv) != allowed {
		t.Errorf("received %d datagrams, want %d", len(recv), allowed)
	}
}

// receiver binds a socket on 127.0.0.1 and reads want datagrams from it
// in the background; the channel gets them (fewer if the socket failed).
func receiver(t *testing.T, want int) (addr netip.AddrPort, got <-chan [][]byte) {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadBuffer(1 << 20)
	// A bound on a failing test, not a synchronisation: the reader stops
	// when it has every datagram.
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	m, err := mmsg.New(c, 64)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan [][]byte, 1)
	go func() {
		var recv [][]byte
		ds := make([]mmsg.Datagram, 64)
		for i := range ds {
			ds[i].Buf = make([]byte, 1500)
		}
		for len(recv) < want {
			n, err := m.Read(ds[:min(len(ds), want-len(recv))])
			for _, d := range ds[:n] {
				recv = append(recv, bytes.Clone(d.Buf[:d.N]))
			}
			if err != nil {
				break
			}
		}
		out <- recv
	}()
	return c.LocalAddr().(*net.UDPAddr).AddrPort(), out
}

// Open-loop: a sender stalled for 100 ms at transaction 50 does not skip
// what fell due meanwhile; it sends it late, and the lateness shows in
// what the receiver measures from the schedule (and in MaxBehind). No
// transaction arrives before it is due.
func TestSendOpenLoopStall(t *testing.T) {
	const count, rate, stallAt = 200, 1000.0, 50
	const stall = 100 * time.Millisecond
	l, err := Build(Config{Seed: seed, Accounts: 16, Blockhash: blockhash, Count: count})
	if err != nil {
		t.Fatal(err)
	}
	index := make(map[string]int, count)
	for i, tx := range l.Txs {
		index[string(tx)] = i
	}
	in, arrivals := timedReceiver(t, count)
	stalledAt := -1 // the next transaction when the sender stalled
	sched := Schedule{Start: time.Now().Add(5 * time.Millisecond), Rate: rate}
	res, err := l.Send(SendConfig{Target: in, Rate: rate, Start: sched.Start, BatchSize: 16,
		Accepting: func(int) bool { t.Error("open-loop asked Accepting"); return true },
		stall: func(next int) {
			// At 50 or the first batch after it (a sender behind
			// schedule sends several at once).
			if next >= stallAt && stalledAt < 0 {
				stalledAt = next
				time.Sleep(stall) // the stimulus: a sender descheduled
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != count || !res.Start.Equal(sched.Start) {
		t.Fatalf("sent %d from %v, want %d from %v", res.Sent, res.Start, count, sched.Start)
	}
	// The transaction next when the stall began was due at most 1/rate
	// after it began, so it went out at least stall - 1 ms late.
	const late = stall - time.Millisecond - time.Millisecond/2
	if stalledAt < 0 {
		t.Fatal("the sender never stalled")
	}
	if res.MaxBehind < late {
		t.Errorf("MaxBehind %v after a %v stall", res.MaxBehind, stall)
	}
	got := <-arrivals
	if len(got) != count {
		t.Fatalf("received %d of %d", len(got), count)
	}
	var worst time.Duration
	for _, a := range got {
		i, ok := index[string(a.data)]
		if !ok {
			t.Fatal("a datagram that is no transaction of the load")
		}
		lat := a.at.Sub(sched.At(i))
		if lat < 0 {
			t.Errorf("transaction %d arrived %v before it was due", i, -lat)
		}
		if i == stalledAt && lat < late {
			t.Errorf("transaction %d, due during the stall, has latency %v from its schedule, want %v or more", i, lat, stall)
		}
		worst = max(worst, lat)
	}
	if worst < late {
		t.Errorf("worst latency from the schedule %v, after a %v stall", worst, stall)
	}
}

// Open-loop with a Duration: the transactions due before it, and only
// those, are sent.
func TestSendOpenLoopDuration(t *testing.T) {
	const rate = 2000.0
	l, err := Build(Config{Seed: seed, Accounts: 16, Blockhash: blockhash, Count: 500})
	if err != nil {
		t.Fatal(err)
	}
	want := Schedule{Rate: rate}.Count(100 * time.Millisecond)
	if want != 200 {
		t.Fatalf("Count(100ms) at %v/s = %d, want 200", rate, want)
	}
	in, got := receiver(t, want)
	res, err := l.Send(SendConfig{Target: in, Rate: rate, Duration: 100 * time.Millisecond})
	if err != nil || res.Sent != want {
		t.Fatalf("sent %d (%v), want %d", res.Sent, err, want)
	}
	if recv := <-got; len(recv) != want {
		t.Errorf("received %d, want %d", len(recv), want)
	}
}

// Schedule.Due is the count of transactions with At(i) <= now, at and
// around each due time.
func TestScheduleDue(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, rate := range []float64{1, 3, 1000, 123_457} {
		s := Schedule{Start: start, Rate: rate}
		if s.Due(start.Add(-1)) != 0 || s.Due(start) != 1 {
			t.Errorf("rate %v: due before start %d, at start %d", rate, s.Due(start.Add(-1)), s.Due(start))
		}
		for i := 1; i < 50; i++ {
			at := s.At(i)
			if s.Due(at) != i+1 || s.Due(at.Add(-1)) != i {
				t.Errorf("rate %v, transaction %d due at %v: Due there %d, a nanosecond before %d", rate, i, at, s.Due(at), s.Due(at.Add(-1)))
			}
		}
	}
}

func TestSendNegativeRate(t *testing.T) {
	l := &Load{Txs: [][]byte{{1}}}
	if _, err := l.Send(SendConfig{Target: netip.MustParseAddrPort("127.0.0.1:9"), Rate: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("rate -1: %v, want ErrConfig", err)
	}
}

type arrival struct {
	data []byte
	at   time.Time
}

// timedReceiver is receiver with each datagram's arrival time (taken
// right after the read returns: no earlier than its send).
func timedReceiver(t *testing.T, want int) (netip.AddrPort, <-chan []arrival) {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadBuffer(1 << 20)
	c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a bound on a failing test
	out := make(chan []arrival, 1)
	go func() {
		var got []arrival
		buf := make([]byte, 1500)
		for len(got) < want {
			n, _, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				break
			}
			got = append(got, arrival{data: bytes.Clone(buf[:n]), at: time.Now()})
		}
		out <- got
	}()
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(c.LocalAddr().(*net.UDPAddr).Port)), out
}

// Index finds every transaction by its first signature (a duplicate by
// its original), and nothing else.
func TestIndex(t *testing.T) {
	l, err := Build(Config{Seed: seed, Accounts: 16, Blockhash: blockhash, Count: 600, InvalidFraction: 0.5, RandSeed: 9})
	if err != nil {
		t.Fatal(err)
	}
	x := l.Index()
	found := 0
	for i, tx := range l.Txs {
		if len(tx) < 65 {
			continue
		}
		sig := [64]byte(tx[1:65])
		j, ok := x.Lookup(&sig)
		if !ok || (j != i && !bytes.Equal(l.Txs[j][1:65], sig[:])) || j > i {
			t.Fatalf("transaction %d (%v): found %d, %v", i, l.Kinds[i], j, ok)
		}
		if l.Kinds[i] == Duplicate && l.Kinds[j] != Valid {
			t.Errorf("duplicate %d maps to %d, a %v", i, j, l.Kinds[j])
		}
		found++
	}
	if found < 500 {
		t.Fatalf("only %d transactions long enough to look up", found)
	}
	var other [64]byte
	other[0] = 1
	if _, ok := x.Lookup(&other); ok {
		t.Error("found a signature no transaction carries")
	}
	sig := [64]byte(l.Txs[0][1:65])
	if n := testing.AllocsPerRun(100, func() { x.Lookup(&sig) }); n != 0 {
		t.Errorf("Lookup: %v allocations", n)
	}
}

// Build stops signing once Config.Stop closes (a signal during a large
// load's signing), and says so.
func TestBuildStops(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	signed := 0
	_, err := Build(Config{Seed: "stop", Accounts: 8, Count: 200_000, Stop: stop,
		Progress: func(done, total int) { signed = done }})
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("Build with Stop closed: %v, want ErrStopped", err)
	}
	if signed != 0 {
		t.Fatalf("signed %d of 200,000 after Stop closed", signed)
	}
}

// A load signed in windows: Build signs the first SignFirst, Sign the
// rest over another blockhash, byte for byte what Build would have made
// over it, with each duplicate a copy of its source as sent.
func TestSignInWindows(t *testing.T) {
	cfg := Config{Seed: "windows", Accounts: 8, Count: 300, InvalidFraction: 0.5, RandSeed: 3, Blockhash: [32]byte{1}}
	whole := cfg
	whole.Blockhash = [32]byte{2}
	want, err := Build(whole)
	if err != nil {
		t.Fatal(err)
	}
	cfg.SignFirst = 100
	l, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l.Txs[99] == nil || l.Txs[100] != nil {
		t.Fatal("SignFirst 100: want the first 100 signed and no more")
	}
	sent := map[int][]byte{}
	earlier := func(j int) []byte {
		b, ok := sent[j]
		if !ok {
			t.Fatalf("a duplicate's source %d was never sent", j)
		}
		return b
	}
	for i := range 100 {
		sent[i] = l.Txs[i]
	}
	rest, err := l.Sign(100, 300, [32]byte{2}, earlier)
	if err != nil {
		t.Fatal(err)
	}
	dups := 0
	for k, tx := range rest {
		i := 100 + k
		switch l.Kinds[i] {
		case Duplicate:
			dups++
			if j := l.source(i); !bytes.Equal(tx, sent[j]) && !(j >= 100 && bytes.Equal(tx, rest[j-100])) {
				t.Fatalf("duplicate %d is not its source %d as sent", i, j)
			}
		default:
			if !bytes.Equal(tx, want.Txs[i]) {
				t.Fatalf("transaction %d (%v) differs from Build's over the same blockhash", i, l.Kinds[i])
			}
		}
		sent[i] = tx
	}
	if dups == 0 {
		t.Fatal("no duplicate in the windows: the test checks nothing of them")
	}
	if _, err := l.Sign(200, 400, [32]byte{2}, earlier); err == nil {
		t.Fatal("signing past the load accepted")
	}
}
