package trace_test

import (
	"bytes"
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
)

// collector is an OTLP gRPC trace receiver, what Jaeger or Tempo listen
// with: it keeps the spans it is sent.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// Spans of two hops reach an OTLP endpoint, parented across the hop
// through the binary SpanContext, when the provider shuts down.
func TestOTLPExport(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	col := &collector{}
	coltracepb.RegisterTraceServiceServer(srv, col)
	go srv.Serve(ln)
	defer srv.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := trace.Setup(ctx, trace.Config{SampleRatio: 1, OTLPEndpoint: ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	fetch := p.Hop("fetch").Start(trace.SpanContext{}, 0, false)
	fetch.End()
	sent := packet.Now()
	verify := p.Hop("sigverify").Start(fetch.Context(), sent, false)
	verify.End()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown (flushes the exporter): %v", err)
	}

	col.mu.Lock()
	defer col.mu.Unlock()
	byName := map[string]*tracepb.Span{}
	for _, s := range col.spans {
		byName[s.GetName()] = s
	}
	f, v := byName["fetch"], byName["sigverify"]
	if len(col.spans) != 2 || f == nil || v == nil {
		t.Fatalf("collector got %d spans %v, want fetch and sigverify", len(col.spans), byName)
	}
	fc := fetch.Context()
	if !bytes.Equal(f.GetTraceId(), fc.TraceID[:]) || !bytes.Equal(f.GetSpanId(), fc.SpanID[:]) {
		t.Fatal("fetch span exported under another identity")
	}
	if !bytes.Equal(v.GetTraceId(), f.GetTraceId()) || !bytes.Equal(v.GetParentSpanId(), f.GetSpanId()) {
		t.Fatal("sigverify span is not fetch's child")
	}
}

// deadEndpoint returns a 127.0.0.1 address with nothing listening: a
// port the kernel handed out and that was closed again.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A dead OTLP endpoint loses every span it is sent, and they are counted:
// OTLPDropped equals the spans ended, the first failure is kept, and
// Shutdown gives up within the OTLP timeout rather than the SDK's 10 s
// per export.
func TestOTLPDeadEndpoint(t *testing.T) {
	before := runtime.NumGoroutine()
	const timeout = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := trace.Setup(ctx, trace.Config{SampleRatio: 1, OTLPEndpoint: deadEndpoint(t), OTLPTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	const spans = 5
	for range spans {
		p.Hop("fetch").Start(trace.SpanContext{}, 0, false).End()
	}
	start := time.Now()
	err = p.Shutdown(ctx)
	took := time.Since(start)
	t.Logf("shutdown took %v: %v; first export error: %v", took, err, p.OTLPErr())
	// The bound is the timeout with a wide margin for a busy machine:
	// without it the SDK waits 10 s for one export.
	if took > timeout+5*time.Second {
		t.Errorf("shutdown with a dead endpoint took %v, want about %v", took, timeout)
	}
	if got := p.OTLPDropped(); got != spans {
		t.Errorf("OTLPDropped = %d, want the %d spans ended", got, spans)
	}
	// Shutdown gave up after the timeout, as it should; the SDK then
	// stops the exporter and its gRPC connection in the background. Wait
	// for that (nothing signals it), so that those goroutines do not
	// allocate during the tests after this one: testing.AllocsPerRun
	// counts every goroutine's allocations (TestSampleZeroRecordsTracersOnly
	// saw 1.0 under -race in CI).
	for deadline := time.Now().Add(20 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines 20 s after shutdown, %d before the test", runtime.NumGoroutine(), before)
		}
	}
}

// The probe tells a listening endpoint from a dead one, within its
// context's deadline.
func TestProbeOTLP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := trace.ProbeOTLP(ctx, ln.Addr().String()); err != nil {
		t.Errorf("probe of a listening endpoint: %v", err)
	}
	dead := deadEndpoint(t)
	if err := trace.ProbeOTLP(ctx, dead); err == nil || !strings.Contains(err.Error(), dead) {
		t.Errorf("probe of a dead endpoint: %v, want an error naming it", err)
	}
}
