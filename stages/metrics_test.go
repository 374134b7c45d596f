package stages

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tpugo/tpu/packet"
)

// TestPoolGauges collects the pool gauges after known traffic and finds
// the pool's own figures, and fetch's socket drops beside them.
func TestPoolGauges(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	pool, err := packet.NewPool(packet.Config{BatchCap: 4, MaxIdle: 8})
	if err != nil {
		t.Fatal(err)
	}
	drops := make(socketDrops, 2)
	drops[0].Store(5)
	drops[1].Store(7)
	if err := registerGauges(mp.Meter("test"), pool, drops.sum); err != nil {
		t.Fatal(err)
	}
	held := []*packet.Batch{pool.Get(), pool.Get(), pool.Get()}
	held[0].Release() // 2 live, 1 idle, 3 allocated
	held[0] = pool.Get()
	held[0].Release()
	// Still 2 live and 1 idle; the idle one was reused, so 3 allocated.
	want := map[string]int64{"tpu.pool.live": 2, "tpu.pool.idle": 1, "tpu.pool.allocs": 3, "tpu.fetch.socket_dropped": 12}
	if s := pool.Stats(); int64(s.Live) != want["tpu.pool.live"] || int64(s.Idle) != want["tpu.pool.idle"] || int64(s.Allocs) != want["tpu.pool.allocs"] {
		t.Fatalf("the test's arithmetic is off: pool %+v", s)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				got[m.Name] = d.DataPoints[0].Value
			case metricdata.Sum[int64]:
				got[m.Name] = d.DataPoints[0].Value
			}
		}
	}
	for name, n := range want {
		if v, ok := got[name]; !ok || v != n {
			t.Errorf("%s = %d (collected: %v), want %d", name, v, ok, n)
		}
	}
	held[1].Release()
	held[2].Release()
}
