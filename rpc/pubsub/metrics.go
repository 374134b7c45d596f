package pubsub

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// What the server exports at /metrics (Config.Meter), read from its
// counters at each collection. In Prometheus's names:
//
//	tpu_pubsub_connections                 connections open
//	tpu_pubsub_connections_total{result}   connections accepted, or refused at MaxConns
//	tpu_pubsub_subscriptions               subscriptions open
//	tpu_pubsub_notifications_total         notifications written to a connection
//	tpu_pubsub_disconnects_total{reason}   connections the server closed: slow_reader (its
//	                                       queue full: QueueLen messages or QueueBytes),
//	                                       server_queue_full (all queues at MaxQueueBytes),
//	                                       ping_timeout, write_error
//	tpu_pubsub_queued_bytes                bytes waiting in every connection's queue
//	tpu_pubsub_encodings_total             account notifications encoded (once per account,
//	                                       encoding and level a slot writes)
//	tpu_pubsub_lost_slots_total            committed slots the feed was too far behind to
//	                                       queue (read back from the ledger)
//	tpu_pubsub_lost_slot_accounts_total    of those, slots whose written accounts program
//	                                       subscriptions could not be told of (no history)
func (s *Server) registerMetrics(m metric.Meter) error {
	open, err1 := m.Int64ObservableGauge("tpu.pubsub.connections", metric.WithDescription("websocket connections open"))
	conns, err2 := m.Int64ObservableCounter("tpu.pubsub.connections.handled", metric.WithDescription("websocket connections accepted or refused (MaxConns), by result"))
	subs, err3 := m.Int64ObservableGauge("tpu.pubsub.subscriptions", metric.WithDescription("subscriptions open"))
	sent, err4 := m.Int64ObservableCounter("tpu.pubsub.notifications", metric.WithDescription("notifications written to a connection"))
	disc, err5 := m.Int64ObservableCounter("tpu.pubsub.disconnects", metric.WithDescription("connections the server closed, by reason"))
	lost, err6 := m.Int64ObservableCounter("tpu.pubsub.lost_slots", metric.WithDescription("committed slots the feed could not queue and read back from the ledger"))
	lostAccts, err9 := m.Int64ObservableCounter("tpu.pubsub.lost_slot_accounts", metric.WithDescription("lost slots whose written accounts program subscriptions could not be told of (no history)"))
	queued, err7 := m.Int64ObservableGauge("tpu.pubsub.queued_bytes", metric.WithUnit("By"), metric.WithDescription("bytes waiting in every connection's queue"))
	enc, err8 := m.Int64ObservableCounter("tpu.pubsub.encodings", metric.WithDescription("account notifications encoded, once per account, encoding and level a slot writes"))
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8, err9); err != nil {
		return fmt.Errorf("pubsub: metrics: %w", err)
	}
	attr := func(k, v string) metric.ObserveOption {
		return metric.WithAttributeSet(attribute.NewSet(attribute.String(k, v)))
	}
	accepted, refused := attr("result", "accepted"), attr("result", "refused")
	slow, ping, write := attr("reason", "slow_reader"), attr("reason", "ping_timeout"), attr("reason", "write_error")
	full := attr("reason", "server_queue_full")
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(open, s.conns.Load())
		o.ObserveInt64(conns, int64(s.stats.accepted.Load()), accepted)
		o.ObserveInt64(conns, int64(s.stats.refused.Load()), refused)
		o.ObserveInt64(subs, s.reg.count.Load())
		o.ObserveInt64(sent, int64(s.reg.sent.Load()))
		o.ObserveInt64(disc, int64(s.stats.slowReaders.Load()), slow)
		o.ObserveInt64(disc, int64(s.stats.pingTimeouts.Load()), ping)
		o.ObserveInt64(disc, int64(s.stats.writeErrors.Load()), write)
		o.ObserveInt64(disc, int64(s.stats.serverQueueFull.Load()), full)
		o.ObserveInt64(lost, int64(s.feed.lost.Load()))
		o.ObserveInt64(lostAccts, int64(s.feed.lostAccounts.Load()))
		o.ObserveInt64(queued, s.stats.queued.Load())
		o.ObserveInt64(enc, int64(s.reg.encoded.Load()))
		return nil
	}, open, conns, subs, sent, disc, lost, lostAccts, queued, enc)
	if err != nil {
		return fmt.Errorf("pubsub: metrics: %w", err)
	}
	return nil
}

// Stats is a snapshot of the server's counters.
type Stats struct {
	Conns         int64  // open
	Accepted      uint64 // connections accepted
	Refused       uint64 // connections refused at MaxConns
	Subscriptions int64  // open
	Notifications uint64 // written (or being written) to a connection
	Encodings     uint64 // account notifications encoded: once per account, encoding and level a slot writes, however many subscriptions share them
	SlowReaders   uint64 // connections closed with their queue full (QueueLen or QueueBytes)
	QueueFull     uint64 // connections closed with every queue together at MaxQueueBytes
	QueuedBytes   int64  // waiting in every connection's queue now
	PingTimeouts  uint64 // connections closed for want of a pong
	WriteErrors   uint64 // connections closed on a failed or timed-out write
	LostSlots     uint64 // committed slots the feed could not queue
	// LostAccounts counts lost slots whose written accounts the program
	// subscriptions could not be told of: the ledger keeps no history
	// to read their writers from.
	LostAccounts uint64
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	return Stats{
		Conns: s.conns.Load(), Accepted: s.stats.accepted.Load(), Refused: s.stats.refused.Load(),
		Subscriptions: s.reg.count.Load(), Notifications: s.reg.sent.Load(), Encodings: s.reg.encoded.Load(),
		SlowReaders: s.stats.slowReaders.Load(), QueueFull: s.stats.serverQueueFull.Load(), QueuedBytes: s.stats.queued.Load(),
		PingTimeouts: s.stats.pingTimeouts.Load(),
		WriteErrors:  s.stats.writeErrors.Load(), LostSlots: s.feed.lost.Load(),
		LostAccounts: s.feed.lostAccounts.Load(),
	}
}
