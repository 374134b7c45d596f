package trace

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime/pprof"
	"time"

	"github.com/tpugo/tpu/httpguard"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
)

// metricsServer serves a Provider's instruments at /metrics, in
// Prometheus's text format, from its own registry (not the global one).
type metricsServer struct {
	srv  *http.Server
	ln   *httpguard.Listener
	done chan struct{} // closed when Serve returns
	url  string
}

// profiling, when not nil, is called by the heap-profile handler while
// it holds the one profile turn: a test's hold.
var profiling func()

// serveMetrics listens on addr (host:port; port 0 picks a free one; no
// host means 127.0.0.1) and serves the instruments of the meter provider
// that reads through the returned exporter, and the heap profile if
// pprof. Close the server to stop it.
func serveMetrics(addr string, pprofOn bool) (*metricsServer, *otelprom.Exporter, error) {
	addr = httpguard.DefaultLoopback(addr)
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, fmt.Errorf("trace: Prometheus exporter: %w", err)
	}
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		exp.Shutdown(context.Background())
		return nil, nil, fmt.Errorf("trace: serving metrics at %s: %w", addr, err)
	}
	ln, err := httpguard.NewListener(raw, httpguard.Config{MaxConns: httpguard.DefaultMaxConns, MaxConnsPerAddr: httpguard.DefaultMaxConnsPerAddr})
	if err != nil {
		raw.Close()
		exp.Shutdown(context.Background())
		return nil, nil, fmt.Errorf("trace: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if pprofOn {
		// The heap profile (in use and allocated, as of the last GC) for
		// a soak to take at moments it chooses (scripts/soak.sh); only
		// that one: not net/http/pprof, which would also serve CPU
		// profiles and traces. One at a time: each costs a walk of the
		// heap's samples, and 300 at once took 23 CPU-seconds in 20 s.
		turn := make(chan struct{}, 1)
		mux.HandleFunc("/debug/pprof/heap", func(w http.ResponseWriter, _ *http.Request) {
			select {
			case turn <- struct{}{}:
			default:
				http.Error(w, "a heap profile is being taken; one at a time", http.StatusTooManyRequests)
				return
			}
			defer func() { <-turn }()
			if profiling != nil {
				profiling()
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			pprof.Lookup("heap").WriteTo(w, 0)
		})
	}
	// RPC's limits by default (httpguard's): its header limit, timeouts
	// and connection caps. A scrape's response is tens of KiB, so 512
	// connections hold tens of MiB at most.
	m := &metricsServer{
		srv: &http.Server{Handler: mux, ConnState: ln.ConnState,
			MaxHeaderBytes: httpguard.DefaultMaxHeaderBytes, ReadHeaderTimeout: httpguard.DefaultReadHeaderTimeout,
			ReadTimeout: httpguard.DefaultReadTimeout, WriteTimeout: httpguard.DefaultWriteTimeout,
			IdleTimeout: httpguard.DefaultIdleTimeout},
		ln:   ln,
		done: make(chan struct{}),
		url:  "http://" + ln.Addr().String() + "/metrics",
	}
	go func() {
		defer close(m.done)
		m.srv.Serve(ln) // returns http.ErrServerClosed at close
	}()
	return m, exp, nil
}

// close stops listening, ends open connections and waits for Serve.
func (m *metricsServer) close() error {
	err := m.srv.Close()
	<-m.done
	return err
}

// MetricsURL returns the URL /metrics is served at (with the port chosen
// when Config.MetricsAddr asked for port 0), or "" when not serving.
func (p *Provider) MetricsURL() string {
	if p.metrics == nil {
		return ""
	}
	return p.metrics.url
}

// Latency is a distribution of durations recorded twice: in a Histogram,
// for summaries (quantiles within HistogramError), and in an OTel
// histogram in seconds with the hop histograms' buckets (1-2-5 steps from
// 1 us to 10 s), for /metrics. Record is safe for concurrent use and does
// not allocate.
type Latency struct {
	Histogram
	otel metric.Float64Histogram
}

// Latency returns a new Latency whose OTel histogram is called name
// (dotted, as "tpu.latency.socket_to_executed"; /metrics shows it with
// underscores and a _seconds suffix).
func (p *Provider) Latency(name, description string) (*Latency, error) {
	h, err := p.meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(description),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	if err != nil {
		return nil, fmt.Errorf("trace: %s: %w", name, err)
	}
	return &Latency{otel: h}, nil
}

// Record adds one observation to both histograms.
func (l *Latency) Record(d time.Duration) {
	l.Histogram.Record(d)
	l.otel.Record(context.Background(), d.Seconds())
}
