package stages

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/metric"

	"github.com/tpugo/tpu/packet"
)

// registerGauges adds the packet pool's counters to m, read at each
// collection (a /metrics scrape): tpu.pool.live (batches out of the pool),
// tpu.pool.idle and tpu.pool.allocs; and tpu.fetch.socket_dropped, what
// socketDropped returns: datagrams the kernel dropped at fetch's sockets
// (0 where it cannot tell).
func registerGauges(m metric.Meter, pool *packet.Pool, socketDropped func() uint64) error {
	live, err1 := m.Int64ObservableGauge("tpu.pool.live", metric.WithDescription("batches out of the pool"))
	idle, err2 := m.Int64ObservableGauge("tpu.pool.idle", metric.WithDescription("batches idle in the pool"))
	allocs, err3 := m.Int64ObservableCounter("tpu.pool.allocs", metric.WithDescription("batches allocated"))
	dropped, err4 := m.Int64ObservableCounter("tpu.fetch.socket_dropped",
		metric.WithDescription("datagrams the kernel dropped at fetch's sockets, never received (0: unknown, off Linux)"))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("stages: pool gauges: %w", err)
	}
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := pool.Stats()
		o.ObserveInt64(live, int64(s.Live))
		o.ObserveInt64(idle, int64(s.Idle))
		o.ObserveInt64(allocs, int64(s.Allocs))
		o.ObserveInt64(dropped, int64(socketDropped()))
		return nil
	}, live, idle, allocs, dropped)
	if err != nil {
		return fmt.Errorf("stages: pool gauges: %w", err)
	}
	return nil
}
