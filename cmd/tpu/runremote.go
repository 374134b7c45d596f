package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/tpugo/tpu/remote"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/trace"
)

// tpu run's remote verifiers (--verifiers): the dispatcher that sends
// sigverify passes to them, and its counts in the summary.

// startDispatcher starts the dispatcher of --verifiers and
// --cluster-seeds, exports its counts on prov's meter (/metrics) and
// hands it to cfg's sigverify stage; nil without either. The caller
// closes it after the graph stops.
func startDispatcher(f runFlags, cfg *stages.Config, prov *trace.Provider, log *slog.Logger) (*remote.Dispatcher, error) {
	if f.verifiers == "" && f.clusterSeeds == "" {
		return nil, nil
	}
	tlsCfg, err := f.remoteTLS.load()
	if err != nil {
		return nil, err
	}
	lc := remote.LeaderConfig{
		Listen: f.remoteListen, Verifiers: splitList(f.verifiers), Credits: f.remoteCredits,
		Timeout: f.remoteTimeout, Audit: f.remoteAudit, Verify: cfg.Sigverify.Verify, TLS: tlsCfg, Logger: log,
	}
	if f.clusterSeeds != "" {
		lc.Cluster = &remote.ClusterConfig{Name: f.clusterName, Seeds: splitList(f.clusterSeeds)}
	}
	d, err := remote.NewDispatcher(lc)
	if err != nil {
		return nil, fmt.Errorf("--verifiers: %w", err)
	}
	if prov != nil {
		if err := d.RegisterMetrics(prov.Meter()); err != nil {
			d.Close()
			return nil, err
		}
	}
	log.Info("remote verifiers", "leader", d.Addr(), "verifiers", f.verifiers, "cluster", f.clusterSeeds, "credits", f.remoteCredits, "audit", f.remoteAudit)
	cfg.Sigverify.Offload = d
	cfg.Sigverify.NoLocal = !f.sigverifyLocal
	return d, nil
}

// remoteSummary is the dispatcher's counts in the run's summary: passes
// taken end once each, remote (verdicts applied) or local (checked here,
// for one of the reasons that follow it).
type remoteSummary struct {
	Passes   uint64 `json:"passes"`
	Packets  uint64 `json:"packets"`
	Remote   uint64 `json:"remote"`
	Local    uint64 `json:"local"`
	Timeout  uint64 `json:"remote_timeout"`
	Retry    uint64 `json:"remote_retry"`
	Lied     uint64 `json:"lied"`
	Refused  uint64 `json:"refused"`
	NoWorker uint64 `json:"no_worker"`
	Late     uint64 `json:"late"`
	Audited  uint64 `json:"audited"`
	Liars    uint64 `json:"liars"`
	TooBig   uint64 `json:"too_big"`
}

func newRemoteSummary(st remote.Stats) *remoteSummary {
	return &remoteSummary{Passes: st.Sent, Packets: st.Packets, Remote: st.Remote, Local: st.Local, Timeout: st.Timeouts,
		Retry: st.Retries, Lied: st.Lied, Refused: st.Refused, NoWorker: st.NoWorker, Late: st.Late, Audited: st.Audited,
		Liars: st.Liars, TooBig: st.TooBig}
}

func (r *remoteSummary) print(w io.Writer) {
	fmt.Fprintf(w, "remote:     %d passes (%d packets) to verifiers: %d verified there, %d here (remote_timeout %d, remote_retry %d, lied %d, refused %d, no verifier %d); late %d, audited %d packets, liars %d, too big %d\n",
		r.Passes, r.Packets, r.Remote, r.Local, r.Timeout, r.Retry, r.Lied, r.Refused, r.NoWorker, r.Late, r.Audited, r.Liars, r.TooBig)
}
