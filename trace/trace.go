package trace

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/tpugo/tpu/packet"
)

// Config configures a Provider.
type Config struct {
	// ServiceName names the process in traces. Empty means "tpu".
	ServiceName string
	// SampleRatio is the fraction of batches whose spans are recorded,
	// decided at the first hop and followed by the others (parent-based).
	// Zero records no spans: hop metrics only. Batches carrying a tracer
	// packet are always recorded, so that the packet's path can be read.
	SampleRatio float64
	// TraceWriter receives finished spans as JSON lines, one span per
	// line, in the OTel SDK's stdout exporter format (see ReadSpans).
	// Nil: none.
	TraceWriter io.Writer
	// FileQueue is how many ended spans wait for the TraceWriter before
	// more are dropped (and counted: Provider.FileDropped). Zero means
	// FileQueueSize.
	FileQueue int
	// OTLPEndpoint, host:port, sends spans over OTLP gRPC (insecure), to a
	// local Jaeger or Tempo. Empty: none. What it fails to deliver is
	// counted (Provider.OTLPDropped), its first error kept (OTLPErr).
	OTLPEndpoint string
	// OTLPTimeout bounds each export to OTLPEndpoint, retries included,
	// and the wait for its last exports in Shutdown. Zero means
	// DefaultOTLPTimeout.
	OTLPTimeout time.Duration
	// MetricReader, when not nil, exports the hop histograms and the
	// counters (for example to a test's sdkmetric.ManualReader).
	MetricReader sdkmetric.Reader
	// MetricsAddr, host:port, serves the same instruments at
	// http://MetricsAddr/metrics in Prometheus's text format until
	// Shutdown; port 0 picks a free port (see Provider.MetricsURL). An
	// address with no host (":9100") means loopback (127.0.0.1:9100):
	// every interface must be asked for by name (0.0.0.0:9100). The
	// server has RPC's default limits (httpguard's): it caps its
	// connections (512, 128 from one address), its header (32 KiB) and
	// its read, write and idle times. Empty: not served.
	MetricsAddr string
	// KeepTracers keeps the spans of batches that carried a tracer packet
	// in memory (up to MaxKeptSpans), whatever SampleRatio and with or
	// without an exporter, for Provider.KeptTracers: a run breaks its
	// tracers' time down into segments (BreakDown) from them.
	KeepTracers bool
	// Pprof serves the Go heap profile at /debug/pprof/heap beside
	// /metrics, one request at a time (others get HTTP 429).
	Pprof bool
}

// MaxSpanEvents and MaxSpanLinks are the most events and links a span
// keeps (the SDK's default, 128, is less than the tracer steps and the
// work batches a busy slot's commit span holds). Beyond them the SDK
// drops the newest and counts them on the span.
const (
	MaxSpanEvents = 4096
	MaxSpanLinks  = 4096
)

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("trace: invalid config")

// Validate reports a configuration Setup would reject.
func (c Config) Validate() error {
	if !(c.SampleRatio >= 0 && c.SampleRatio <= 1) { // NaN too
		return fmt.Errorf("%w: sample ratio %v outside [0,1]", ErrConfig, c.SampleRatio)
	}
	if c.OTLPTimeout < 0 {
		return fmt.Errorf("%w: OTLP timeout %v is negative", ErrConfig, c.OTLPTimeout)
	}
	if c.FileQueue < 0 {
		return fmt.Errorf("%w: file queue %d is negative", ErrConfig, c.FileQueue)
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			return fmt.Errorf("%w: metrics address: %v", ErrConfig, err)
		}
	}
	return nil
}

// Provider holds the tracer and meter of a process and its hops.
type Provider struct {
	tp      *sdktrace.TracerProvider // nil: no spans are ever recorded
	tracer  oteltrace.Tracer
	ratio   float64 // of root batches recorded (tracer batches always are)
	mp      *sdkmetric.MeterProvider
	meter   metric.Meter
	metrics *metricsServer // nil: /metrics not served
	file    *spanCount     // nil: no TraceWriter
	otlp    *spanCount     // nil: no OTLPEndpoint
	// otlpBatcher is OTLPEndpoint's, shut down first, within otlpTimeout.
	otlpBatcher sdktrace.SpanProcessor
	otlpTimeout time.Duration
	keep        *keepTracers // nil: Config.KeepTracers unset

	mu   sync.Mutex
	hops map[string]*Hop
}

// tracerKey marks the span of a batch that carries a tracer packet, so
// that a trace viewer can find them. start records such spans whatever the
// sample ratio.
const tracerKey = attribute.Key("tpu.tracer")

// FileQueueSize is how many finished spans wait for the TraceWriter's
// exporter before the SDK drops more: 32 times its default of 2048,
// seconds of spans at --trace-sample 1, at a few hundred bytes each
// (tens of MB) only while the writer is behind.
const FileQueueSize = 1 << 16

// DefaultOTLPTimeout is Config.OTLPTimeout's default: how long an export
// to an OTLP endpoint, and Shutdown's wait for the last ones, may take.
// Short, so that a dead endpoint delays a run's end by seconds at most;
// a local collector answers in milliseconds.
const DefaultOTLPTimeout = 2 * time.Second

// spanCount counts the recorded spans that ended and those an exporter
// delivered (the trace file's writer, the OTLP endpoint): the
// difference is what the destination lacks.
type spanCount struct {
	ended, written atomic.Uint64

	mu  sync.Mutex
	err error // the first failed export's, when kept (countWrites.keep)
}

// countEnds is a span processor that counts recorded spans as they end.
type countEnds struct{ c *spanCount }

func (e countEnds) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (e countEnds) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() { // as the batcher, which drops the rest
		e.c.ended.Add(1)
	}
}

func (countEnds) Shutdown(context.Context) error   { return nil }
func (countEnds) ForceFlush(context.Context) error { return nil }

// countWrites is an exporter counting the spans it delivered. With
// keep, it keeps the first failure's error and returns none: the SDK
// would log each failure itself, in another format than the process's.
type countWrites struct {
	sdktrace.SpanExporter
	c    *spanCount
	keep bool
}

func (w countWrites) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := w.SpanExporter.ExportSpans(ctx, spans)
	if err == nil {
		w.c.written.Add(uint64(len(spans)))
		return nil
	}
	if !w.keep {
		return err
	}
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	if w.c.err == nil {
		w.c.err = err
	}
	return nil
}

// Setup builds a Provider. Call Shutdown to flush exporters and stop
// serving metrics. An error other than ErrConfig is the environment's: an
// address in use, an exporter that could not start.
func Setup(ctx context.Context, cfg Config) (p *Provider, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var readers []sdkmetric.Reader
	if cfg.MetricReader != nil {
		readers = append(readers, cfg.MetricReader)
	}
	var metrics *metricsServer
	if cfg.MetricsAddr != "" {
		m, exp, serr := serveMetrics(cfg.MetricsAddr, cfg.Pprof)
		if serr != nil {
			return nil, serr
		}
		defer func() { // err is Setup's result
			if err != nil {
				m.close()
			}
		}()
		metrics = m
		readers = append(readers, exp)
	}
	if cfg.ServiceName == "" {
		cfg.ServiceName = "tpu"
	}
	res := resource.NewSchemaless(attribute.String("service.name", cfg.ServiceName))
	p = &Provider{hops: map[string]*Hop{}, metrics: metrics}
	var opts []sdktrace.TracerProviderOption
	if cfg.TraceWriter != nil {
		exp, err := stdouttrace.New(stdouttrace.WithWriter(cfg.TraceWriter))
		if err != nil {
			return nil, fmt.Errorf("trace: file exporter: %w", err)
		}
		// The file is the measurement: a span the batcher drops for a full
		// queue (the SDK's 2048, while the writer is behind, as on a
		// CPU-starved machine) is a hole in it, an orphaned child. A
		// blocking queue would stall the hop that ended the span, so the
		// queue is large instead (FileQueueSize).
		// What it still drops is counted (FileDropped). The count of ends
		// comes first, so it never trails the count of writes.
		p.file = &spanCount{}
		opts = append(opts, sdktrace.WithSpanProcessor(countEnds{p.file}),
			sdktrace.WithBatcher(countWrites{exp, p.file, false}, sdktrace.WithMaxQueueSize(cmp.Or(cfg.FileQueue, FileQueueSize))))
	}
	if cfg.OTLPEndpoint != "" {
		p.otlpTimeout = cmp.Or(cfg.OTLPTimeout, DefaultOTLPTimeout)
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(cfg.OTLPEndpoint), otlptracegrpc.WithInsecure(),
			otlptracegrpc.WithTimeout(p.otlpTimeout))
		if err != nil {
			return nil, fmt.Errorf("trace: OTLP exporter: %w", err)
		}
		// Counted as the file's are: what the endpoint lacks is what a
		// failed export lost, what the queue (the SDK's 2048) had no
		// room for while exports were failing, and what Shutdown left.
		p.otlp = &spanCount{}
		p.otlpBatcher = sdktrace.NewBatchSpanProcessor(countWrites{exp, p.otlp, true})
		opts = append(opts, sdktrace.WithSpanProcessor(countEnds{p.otlp}), sdktrace.WithSpanProcessor(p.otlpBatcher))
	}
	if cfg.KeepTracers {
		p.keep = &keepTracers{}
		opts = append(opts, sdktrace.WithSpanProcessor(p.keep))
	}
	p.ratio = cfg.SampleRatio
	if len(opts) > 0 || cfg.SampleRatio > 0 {
		// start decides which batches are recorded and asks the SDK only
		// for those spans: the sampler records what it is given.
		limits := sdktrace.NewSpanLimits()
		limits.EventCountLimit, limits.LinkCountLimit = MaxSpanEvents, MaxSpanLinks
		opts = append(opts, sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(limits))
		p.tp = sdktrace.NewTracerProvider(opts...)
		p.tracer = p.tp.Tracer("github.com/tpugo/tpu")
	} else {
		p.tracer = tracenoop.NewTracerProvider().Tracer("")
	}
	if len(readers) > 0 {
		mopts := []sdkmetric.Option{sdkmetric.WithResource(res)}
		for _, r := range readers {
			mopts = append(mopts, sdkmetric.WithReader(r))
		}
		p.mp = sdkmetric.NewMeterProvider(mopts...)
		p.meter = p.mp.Meter("github.com/tpugo/tpu")
	} else {
		p.meter = metricnoop.NewMeterProvider().Meter("")
	}
	return p, nil
}

// Meter returns the meter, for stages that add their own instruments.
func (p *Provider) Meter() metric.Meter { return p.meter }

// Shutdown flushes and stops the exporters, and stops serving metrics.
// The OTLP exporter gets Config.OTLPTimeout of ctx to deliver what it
// holds; what it has not by then is abandoned, and counted
// (OTLPDropped).
func (p *Provider) Shutdown(ctx context.Context) error {
	var errs []error
	if p.metrics != nil {
		errs = append(errs, p.metrics.close())
	}
	if p.otlpBatcher != nil {
		octx, cancel := context.WithTimeout(ctx, p.otlpTimeout)
		err := p.otlpBatcher.Shutdown(octx) // tp's Shutdown will not wait again
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("trace: OTLP exporter: gave up after %v: %w", p.otlpTimeout, err))
		}
	}
	if p.tp != nil {
		errs = append(errs, p.tp.Shutdown(ctx))
	}
	if p.mp != nil {
		errs = append(errs, p.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// FileDropped returns how many recorded spans the TraceWriter lacks:
// dropped for a full queue (FileQueueSize), or lost to a failed write.
// Call it after Shutdown, which flushes the file; before, it counts the
// spans still queued too. Without a TraceWriter it is 0.
func (p *Provider) FileDropped() uint64 {
	if p.file == nil {
		return 0
	}
	return p.file.lacks()
}

// OTLPDropped returns how many recorded spans the OTLP endpoint did not
// receive: lost to a failed export (an endpoint down or unreachable),
// dropped for a full queue while exports were failing, or abandoned at
// Shutdown (Config.OTLPTimeout). Call it after Shutdown; before, it
// counts the spans still queued too. Without an endpoint it is 0.
func (p *Provider) OTLPDropped() uint64 {
	if p.otlp == nil {
		return 0
	}
	return p.otlp.lacks()
}

// OTLPErr returns the first failed OTLP export's error, or nil.
func (p *Provider) OTLPErr() error {
	if p.otlp == nil {
		return nil
	}
	p.otlp.mu.Lock()
	defer p.otlp.mu.Unlock()
	return p.otlp.err
}

// lacks returns how many ended spans were not delivered. The ends are
// counted before the exporter sees a span, so they never trail the
// deliveries.
func (c *spanCount) lacks() uint64 { return c.ended.Load() - c.written.Load() }

// ProbeOTLP reports whether endpoint (host:port) accepts a TCP
// connection within ctx's deadline: a dead --otlp-endpoint is worth a
// warning at start rather than a silent loss. It sends nothing.
func ProbeOTLP(ctx context.Context, endpoint string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return fmt.Errorf("trace: OTLP endpoint %s: %w", endpoint, err)
	}
	return c.Close()
}

// Hop returns the hop called name, creating it on first use. Hop names:
// fetch, sigverify, banking.schedule, banking.execute, banking.commit.
func (p *Provider) Hop(name string) *Hop {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h := p.hops[name]; h != nil {
		return h
	}
	h := &Hop{Name: name, p: p}
	h.otelWait, _ = p.meter.Float64Histogram("tpu.hop.queue_wait", metric.WithUnit("s"),
		metric.WithDescription("time from a batch's send by the previous hop to its receipt"),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	h.otelService, _ = p.meter.Float64Histogram("tpu.hop.service", metric.WithUnit("s"),
		metric.WithDescription("time a hop spends on a batch"),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	h.attrs = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("hop", name)))}
	p.hops[name] = h
	return h
}

// latencyBuckets are the upper bounds, in seconds, of the OTel latency
// histograms' buckets (the hops' queue wait and service time): 1-2-5 steps
// from 1 us to 10 s, and above 10 s the overflow bucket. The SDK's default
// bounds (0, 5, 10, 25, ... 10000) are meant for milliseconds and would put
// every hop observation, in seconds, in one bucket. Explicit bounds rather
// than the SDK's base-2 exponential aggregation because the Prometheus
// exporter serves an exponential histogram as a native histogram, which the
// text format scraped at /metrics cannot carry: there it shows a count, a
// sum and the +Inf bucket only (exporter v0.69.0). A bucket holds the
// values above the bound before it up to and including its own.
var latencyBuckets = []float64{
	1e-6, 2e-6, 5e-6,
	1e-5, 2e-5, 5e-5,
	1e-4, 2e-4, 5e-4,
	1e-3, 2e-3, 5e-3,
	1e-2, 2e-2, 5e-2,
	1e-1, 2e-1, 5e-1,
	1, 2, 5,
	10,
}

// Hops returns the hops created so far, by name.
func (p *Provider) Hops() map[string]*Hop {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]*Hop, len(p.hops))
	for k, v := range p.hops {
		out[k] = v
	}
	return out
}

// Hop is one stage boundary. It records the queue wait (sent to
// received) and the service time (received to done) of every batch in
// its own histograms (for summaries) and in OTel histograms (for
// /metrics), sampled or not, and opens one span per batch.
type Hop struct {
	Name      string
	QueueWait Histogram
	Service   Histogram
	// Total is queue wait plus service, per batch: the hop's share of a
	// packet's latency.
	Total Histogram

	p           *Provider
	otelWait    metric.Float64Histogram
	otelService metric.Float64Histogram
	attrs       []metric.RecordOption // built once: a variadic argument would allocate per call
}

// Span is one batch's span at a hop. The zero Span does nothing.
type Span struct {
	hop       *Hop
	span      oteltrace.Span // nil when not recorded
	ctx       SpanContext    // passed on to the next hop
	start     int64          // packet.Now()
	wait      time.Duration
	noMetrics bool
}

// Start opens the batch's span at this hop as a child of parent (an
// invalid parent starts a new trace), records the queue wait since
// sentNanos (packet.Now() at the sender; zero: none), and marks the span
// for recording when the batch carries a tracer packet.
func (h *Hop) Start(parent SpanContext, sentNanos int64, tracer bool) Span {
	return h.StartAt(parent, sentNanos, packet.Now(), tracer)
}

// StartAt is Start for a span whose work began at startNanos
// (packet.Now() then), such as fetch's, which begins with the batch's
// first packet.
func (h *Hop) StartAt(parent SpanContext, sentNanos, startNanos int64, tracer bool) Span {
	var w time.Duration
	if sentNanos > 0 {
		w = time.Duration(startNanos - sentNanos)
		h.QueueWait.Record(w)
		h.otelWait.Record(context.Background(), w.Seconds(), h.attrs...)
	}
	span, sc := h.p.start(h.Name, parent, nil, startNanos, tracer)
	return Span{hop: h, span: span, ctx: sc, start: startNanos, wait: w}
}

// start opens an OTel span if the batch is to be recorded, and returns
// the context to pass on either way. Parent-based sampling at the ratio:
// a batch with a tracer packet is always recorded; a span with a parent
// or links is recorded if the parent or any link is; a root (neither)
// with probability ratio. The decision is made here, before the SDK, so
// that an unrecorded batch costs no span (the SDK makes one for every
// call only to drop it: 0.65 allocations per packet at 1% against 0.14
// at 0): it passes on its parent's context, or a root's fresh one,
// marked not sampled. Only recorded links are attached: a link to a span
// that was never exported would name nothing.
func (p *Provider) start(name string, parent SpanContext, links []SpanContext, startNanos int64, tracer bool) (oteltrace.Span, SpanContext) {
	if p.tp == nil {
		return nil, SpanContext{}
	}
	if !tracer && !anySampled(links) {
		if parent.IsValid() && !parent.Sampled() {
			return nil, parent
		}
		if !parent.IsValid() && (len(links) > 0 || !(rand.Float64() < p.ratio)) {
			var c SpanContext
			binary.LittleEndian.PutUint64(c.TraceID[:8], rand.Uint64())
			binary.LittleEndian.PutUint64(c.TraceID[8:], rand.Uint64()|1)
			binary.LittleEndian.PutUint64(c.SpanID[:], rand.Uint64()|1)
			return nil, c
		}
	}
	ctx := context.Background()
	if parent.IsValid() {
		ctx = oteltrace.ContextWithRemoteSpanContext(ctx, parent.OTel())
	}
	opts := []oteltrace.SpanStartOption{oteltrace.WithTimestamp(packet.Time(startNanos))}
	if tracer {
		opts = append(opts, oteltrace.WithAttributes(tracerKey.Bool(true)))
	}
	if len(links) > 0 {
		ls := make([]oteltrace.Link, 0, len(links))
		for _, l := range links {
			if l.IsValid() && l.Sampled() {
				ls = append(ls, oteltrace.Link{SpanContext: l.OTel()})
			}
		}
		opts = append(opts, oteltrace.WithLinks(ls...))
	}
	_, span := p.tracer.Start(ctx, name, opts...)
	return span, FromOTel(span.SpanContext())
}

func anySampled(scs []SpanContext) bool {
	for _, c := range scs {
		if c.IsValid() && c.Sampled() {
			return true
		}
	}
	return false
}

// Tracing reports whether spans may be recorded at all (an exporter or a
// sample ratio was set): when not, a stage can skip the bookkeeping that
// only spans need.
func (p *Provider) Tracing() bool { return p.tp != nil }

// Record adds a batch's queue wait and service time without a span, for
// work measured elsewhere (a worker's batch, timed by the worker).
func (h *Hop) Record(wait, service time.Duration) {
	if wait >= 0 {
		h.QueueWait.Record(wait)
		h.otelWait.Record(context.Background(), wait.Seconds(), h.attrs...)
	}
	h.Total.Record(max(wait, 0) + service)
	h.Service.Record(service)
	h.otelService.Record(context.Background(), service.Seconds(), h.attrs...)
}

// Span opens a span between two past instants (packet.Now() values), for
// work timed elsewhere; End it to export it. It records no metrics.
func (h *Hop) Span(parent SpanContext, startNanos int64, tracer bool) Span {
	return h.LinkedSpan(parent, nil, startNanos, tracer)
}

// LinkedSpan is Span for work that continues several earlier spans: its
// parent is parent (invalid: it starts a trace of its own), and it links
// to every recorded span in links (OTel span links). It is recorded when
// tracer is true or when its parent or any link is recorded. It does not
// keep links.
func (h *Hop) LinkedSpan(parent SpanContext, links []SpanContext, startNanos int64, tracer bool) Span {
	span, sc := h.p.start(h.Name, parent, links, startNanos, tracer)
	return Span{hop: h, span: span, ctx: sc, start: startNanos, noMetrics: true}
}

// Recording reports whether the span is recorded (worth attributes).
func (s Span) Recording() bool { return s.span != nil && s.span.IsRecording() }

// Context returns the span's context, for the message to the next hop.
func (s Span) Context() SpanContext { return s.ctx }

// SetAttributes sets attributes if the span is recorded.
func (s Span) SetAttributes(kv ...attribute.KeyValue) {
	if s.Recording() {
		s.span.SetAttributes(kv...)
	}
}

// Event adds an event (a tracer packet's step) if the span is recorded.
func (s Span) Event(name string, kv ...attribute.KeyValue) {
	if s.Recording() {
		s.span.AddEvent(name, oteltrace.WithAttributes(kv...))
	}
}

// EventAt adds an event at atNanos (a packet.Now() value; a tracer
// packet's step, stamped when it happened) if the span is recorded.
func (s Span) EventAt(name string, atNanos int64, kv ...attribute.KeyValue) {
	if s.Recording() {
		s.span.AddEvent(name, oteltrace.WithTimestamp(packet.Time(atNanos)), oteltrace.WithAttributes(kv...))
	}
}

// End records the service time and ends the span now.
func (s Span) End() { s.EndAt(packet.Now()) }

// EndAt ends the span at endNanos (a packet.Now() value).
func (s Span) EndAt(endNanos int64) {
	if s.hop != nil && !s.noMetrics {
		d := time.Duration(endNanos - s.start)
		s.hop.Service.Record(d)
		s.hop.Total.Record(s.wait + d)
		s.hop.otelService.Record(context.Background(), d.Seconds(), s.hop.attrs...)
	}
	if s.span != nil {
		s.span.End(oteltrace.WithTimestamp(packet.Time(endNanos)))
	}
}
