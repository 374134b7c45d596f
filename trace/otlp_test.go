package trace_test

import (
	"bytes"
	"context"
	"net"
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
