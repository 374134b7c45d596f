package pubsub_test

import (
	"context"
	"testing"

	"github.com/tpugo/tpu/banking/ledger"

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
		"tpu.pubsub.subscriptions":                 1,
		"tpu.pubsub.disconnects/slow_reader":       0,
		"tpu.pubsub.disconnects/server_queue_full": 0,
		"tpu.pubsub.lost_slots":                    0,
		"tpu.pubsub.encodings":                     int64(s.Encodings), // no account subscription: 0 and stays so
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
