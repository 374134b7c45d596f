package pubsub_test

import (
	"context"
	"testing"

	"github.com/tpugo/tpu/banking/ledger"

	solana "github.com/gagliardetto/solana-go"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tpugo/tpu/rpc/pubsub"
)

// TestMetrics: the counters reach the meter with Stats's figures.
func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	n := startNode(t, pubsub.Config{Meter: mp.Meter("tpu")}, ledger.SyncEachSlot)
	c := n.dial(t)
	// An account notified once (processed: encoded at commit, once), so
	// that the encodings counted are 1, not a 0 any counter would give.
	to := solana.NewWallet().PublicKey()
	c.subscribe("accountSubscribe", to.String(), map[string]any{"commitment": "processed", "encoding": "base64"})
	n.send(t, n.transfer(t, to, 3_000_000))
	if m := c.next(); m.Method != "accountNotification" {
		t.Fatalf("unexpected %s", m.raw)
	}
	c.subscribe("slotSubscribe")
	c.next()
	c.next()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	s := n.ps.Stats()
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					name := m.Name
					if v, ok := p.Attributes.Value("result"); ok {
						name += "/" + v.AsString()
					}
					if v, ok := p.Attributes.Value("reason"); ok {
						name += "/" + v.AsString()
					}
					got[name] = p.Value
				}
			case metricdata.Gauge[int64]:
				got[m.Name] = d.DataPoints[0].Value
			}
		}
	}
	for name, want := range map[string]int64{
		"tpu.pubsub.connections":                   1,
		"tpu.pubsub.connections.handled/accepted":  1,
		"tpu.pubsub.connections.handled/refused":   0,
		"tpu.pubsub.subscriptions":                 2,
		"tpu.pubsub.disconnects/slow_reader":       0,
		"tpu.pubsub.disconnects/server_queue_full": 0,
		"tpu.pubsub.lost_slots":                    0,
		"tpu.pubsub.lost_slot_accounts":            0,
		"tpu.pubsub.encodings":                     1,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %d (present %v), want %d", name, v, ok, want)
		}
	}
	// Notifications go on while the test reads: at least the two read,
	// at most what Stats says now.
	if v := got["tpu.pubsub.notifications"]; v < 2 || uint64(v) > n.ps.Stats().Notifications || s.Notifications < 2 {
		t.Errorf("notifications %d, Stats %d", v, s.Notifications)
	}
	// Queued bytes move as the writer runs: present, within 0 and what
	// one slot notification's bytes could leave.
	if v, ok := got["tpu.pubsub.queued_bytes"]; !ok || v < 0 || v > 1<<20 {
		t.Errorf("queued bytes %d (present %v)", v, ok)
	}
}
