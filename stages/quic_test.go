package stages_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/quic"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/trace"
)

// TestQUICIngress: transactions sent over QUIC execute like UDP ones;
// the snapshot and /metrics count the QUIC reader's events alike, and
// name the staked sender.
func TestQUICIngress(t *testing.T) {
	prov, err := trace.Setup(context.Background(), trace.Config{MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer prov.Shutdown(context.Background())
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	var id quic.Identity
	copy(id[:], key.Public().(ed25519.PublicKey))
	g := startGraph(t, stages.Config{Trace: prov, Fetch: stages.FetchConfig{
		QUIC: quic.Config{Addr: "127.0.0.1:0", Stakes: quic.NewStakes(map[quic.Identity]uint64{id: 100})}}})
	addr, ok := g.QUICAddr()
	if !ok {
		t.Fatal("the QUIC TPU is off")
	}
	load, err := loadgen.Build(loadgen.Config{Seed: seed, Accounts: 64, Blockhash: latestBlockhash(t, g), Count: 300, Lamports: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := quic.Dial(ctx, addr, key)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tx := range load.Txs {
		if err := c.Send(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	s := waitSettled(t, g, 300)
	if s.Received != 300 || s.Outcomes[packet.OutcomeExecutedOK] != 300 || s.QUIC[quic.EventStreamReceived] != 300 {
		t.Fatalf("received %d, executed %d, QUIC %v", s.Received, s.Outcomes[packet.OutcomeExecutedOK], s.QUIC)
	}
	// An oversize stream: counted, no packet.
	_ = c.Send(ctx, make([]byte, packet.Size+1))
	<-c.Raw().Context().Done()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err = g.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if s.QUIC[quic.EventStreamTooLarge] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the oversize stream was not counted: %v", s.QUIC)
		}
		time.Sleep(10 * time.Millisecond)
	}
	m := scrapeQUIC(t, prov.MetricsURL())
	if m["stream_received"] != 300 || m["stream_too_large"] != 1 || m["conn_accepted"] != 1 || m["conn_refused"] != 0 {
		t.Fatalf("tpu_fetch_quic_total %v", m)
	}
	peers := g.QUICPeers()
	if len(peers) != 1 || !peers[0].Staked || peers[0].Stake != 100 || peers[0].Streams != 300 {
		t.Fatalf("peers %+v", peers)
	}
	if s := stop(t, g); s.Received != 300 {
		t.Fatalf("received %d after stop", s.Received)
	}
}

var quicSeries = regexp.MustCompile(`(?m)^tpu_fetch_quic_total\{([^}]*)\} (\S+)$`)
var eventLabel = regexp.MustCompile(`event="([a-z_]+)"`)

// scrapeQUIC returns tpu_fetch_quic_total by event.
func scrapeQUIC(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, m := range quicSeries.FindAllStringSubmatch(string(b), -1) {
		ev := eventLabel.FindStringSubmatch(m[1])
		v, err := strconv.ParseFloat(m[2], 64)
		if ev == nil || err != nil {
			t.Fatalf("bad series %q", m[0])
		}
		out[ev[1]] = v
	}
	if len(out) != int(quic.NumEvents) {
		t.Fatalf("%d events at /metrics, want %d: %v", len(out), quic.NumEvents, out)
	}
	return out
}

// TestQUICStakesFromGenesis: with no stakes configured, the QUIC TPU
// weighs peers by the bank's stake accounts: a genesis validator's
// identity is admitted staked, with its delegated stake, and another
// identity unstaked.
func TestQUICStakesFromGenesis(t *testing.T) {
	g := startGraph(t, stages.Config{
		Fetch:   stages.FetchConfig{QUIC: quic.Config{Addr: "127.0.0.1:0"}},
		Banking: stages.BankingConfig{Bank: bank.Config{Genesis: bank.GenesisConfig{Seed: seed, Accounts: 64, Validators: 2, ValidatorStake: 7_000_000_000}}},
	})
	addr, _ := g.QUICAddr()
	load, err := loadgen.Build(loadgen.Config{Seed: seed, Accounts: 64, Blockhash: latestBlockhash(t, g), Count: 20, Lamports: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	for i, key := range []ed25519.PrivateKey{bank.ValidatorKey(seed, 1), other} {
		c, err := quic.Dial(ctx, addr, key)
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range load.Txs[i*10 : i*10+10] {
			if err := c.Send(ctx, tx); err != nil {
				t.Fatal(err)
			}
		}
		defer c.Close()
	}
	waitSettled(t, g, 20)
	peers := map[string]quic.PeerStats{}
	for _, p := range g.QUICPeers() {
		peers[p.Identity] = p
	}
	v := peers[base58.Encode(bank.ValidatorKey(seed, 1).Public().(ed25519.PublicKey))]
	o := peers[base58.Encode(other.Public().(ed25519.PublicKey))]
	if len(peers) != 2 || !v.Staked || v.Stake != 7_000_000_000 || v.Streams != 10 || o.Staked || o.Stake != 0 || o.Streams != 10 {
		t.Fatalf("peers %+v", g.QUICPeers())
	}
	stop(t, g)
}
