package remote

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// RegisterMetrics exports x's counts (Stats) on m, read at each
// collection. In Prometheus's names:
//
//	tpu_remote_passes_sent_total        passes taken for a verifier (Sent)
//	tpu_remote_packets_sent_total       their packets (Packets)
//	tpu_remote_passes_total{end}        passes ended, once each, by how: remote
//	                                    (verdicts applied), or checked here for
//	                                    remote_timeout, remote_retry, lied,
//	                                    refused or no_worker (the summary's names)
//	tpu_remote_too_big_total            passes TryStart refused as too large
//	tpu_remote_late_replies_total       replies for passes already redone
//	tpu_remote_audited_packets_total    verdicts checked again here
//	tpu_remote_liars_total              verifiers cut off by the audit
//	tpu_remote_verifiers                verifiers in service now
//	tpu_remote_credits_free             their credits free now
func (x *Dispatcher) RegisterMetrics(m metric.Meter) error {
	sent, err1 := m.Int64ObservableCounter("tpu.remote.passes_sent", metric.WithDescription("sigverify passes taken for a remote verifier (a no_worker one never left)"))
	packets, err2 := m.Int64ObservableCounter("tpu.remote.packets_sent", metric.WithUnit("{packet}"), metric.WithDescription("packets of those passes"))
	ended, err3 := m.Int64ObservableCounter("tpu.remote.passes", metric.WithDescription("passes the dispatcher took that ended, by how: remote (verdicts applied) or the reason they were checked here"))
	tooBig, err4 := m.Int64ObservableCounter("tpu.remote.too_big", metric.WithDescription("passes too large for the wire, checked here"))
	late, err5 := m.Int64ObservableCounter("tpu.remote.late_replies", metric.WithDescription("replies for passes already checked here, ignored"))
	audited, err6 := m.Int64ObservableCounter("tpu.remote.audited_packets", metric.WithUnit("{packet}"), metric.WithDescription("remote verdicts checked again here"))
	liars, err7 := m.Int64ObservableCounter("tpu.remote.liars", metric.WithDescription("verifiers cut off for a verdict that failed the audit"))
	verifiers, err8 := m.Int64ObservableGauge("tpu.remote.verifiers", metric.WithDescription("remote verifiers in service"))
	credits, err9 := m.Int64ObservableGauge("tpu.remote.credits_free", metric.WithDescription("credits free over the verifiers in service"))
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8, err9); err != nil {
		return fmt.Errorf("remote: metrics: %w", err)
	}
	end := func(v string) metric.ObserveOption {
		return metric.WithAttributeSet(attribute.NewSet(attribute.String("end", v)))
	}
	ends := [...]metric.ObserveOption{end("remote"), end("remote_timeout"), end("remote_retry"), end("lied"), end("refused"), end("no_worker")}
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := x.Stats()
		o.ObserveInt64(sent, int64(st.Sent))
		o.ObserveInt64(packets, int64(st.Packets))
		for i, n := range [...]uint64{st.Remote, st.Timeouts, st.Retries, st.Lied, st.Refused, st.NoWorker} {
			o.ObserveInt64(ended, int64(n), ends[i])
		}
		o.ObserveInt64(tooBig, int64(st.TooBig))
		o.ObserveInt64(late, int64(st.Late))
		o.ObserveInt64(audited, int64(st.Audited))
		o.ObserveInt64(liars, int64(st.Liars))
		o.ObserveInt64(verifiers, int64(st.Verifiers))
		o.ObserveInt64(credits, int64(st.Credits))
		return nil
	}, sent, packets, ended, tooBig, late, audited, liars, verifiers, credits)
	if err != nil {
		return fmt.Errorf("remote: metrics: %w", err)
	}
	return nil
}
