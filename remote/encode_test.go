package remote

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/remote/wire"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
)

// referenceRequest builds the VerifyRequest of pkts field by field, as
// the generated code has it: what encode must match.
func referenceRequest(id uint64, pkts []*packet.Packet, sc trace.SpanContext) *wire.VerifyRequest {
	req := &wire.VerifyRequest{Id: id}
	for _, p := range pkts {
		req.Data = append(req.Data, p.Data()...)
		req.Sizes = append(req.Sizes, uint32(p.Meta.Size))
		req.Layouts = append(req.Layouts, p.Meta.Parsed[:]...)
	}
	if sc.IsValid() {
		req.TraceId, req.SpanId, req.TraceFlags = sc.TraceID[:], sc.SpanID[:], uint32(sc.Flags)
	}
	return req
}

// livePackets parses bs and returns their live packets and collect's
// sums.
func livePackets(bs ...*packet.Batch) (pkts []*packet.Packet, data, sizes int) {
	sigverify.Parse(bs...)
	return collect(nil, bs)
}

// TestEncodeMatchesProto: encode's bytes are proto.Marshal's of the same
// request built by the generated code, for packets of every size class
// (sizes whose varint takes one byte and two), with and without a
// trace context, whatever the buffer held before; proto.Marshal of an
// encoded returns its bytes as they are, and they read back as the
// request, under its type name.
func TestEncodeMatchesProto(t *testing.T) {
	pool := newPool(t)
	small, big := pool.Get(), pool.Get()
	defer small.Release()
	defer big.Release()
	fill(t, small, 0, 9, 0)    // transfers of about 200 bytes, bad signatures, garbage
	fill(t, big, 100, 6, 1232) // the largest packets
	pkts, data, sizes := livePackets(small, big)
	if len(pkts) != 10 {
		t.Fatalf("%d live packets, want 10", len(pkts))
	}
	flagged := traceCtx{id: 9}.sc()
	unflagged := flagged
	unflagged.Flags = 0
	e := newEncoded()
	e.buf = bytes.Repeat([]byte{0xee}, 5000) // a previous pass's bytes
	for _, c := range []struct {
		name string
		id   uint64
		pkts []*packet.Packet
		sc   trace.SpanContext
	}{
		{"all", 1, pkts, flagged},
		{"no trace", 1 << 40, pkts, trace.SpanContext{}},
		{"trace flags 0", 7, pkts, unflagged},
		{"one packet", 3, pkts[:1], flagged},
		{"largest only", 4, pkts[len(pkts)-1:], trace.SpanContext{}},
	} {
		d, s := 0, 0
		for _, p := range c.pkts {
			d += int(p.Meta.Size)
			s += len(protowire.AppendVarint(nil, uint64(p.Meta.Size)))
		}
		if len(c.pkts) == len(pkts) && (d != data || s != sizes) {
			t.Fatalf("%s: collect's sums %d and %d, want %d and %d", c.name, data, sizes, d, s)
		}
		e.encode(c.id, c.pkts, d, s, c.sc)
		ref := referenceRequest(c.id, c.pkts, c.sc)
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(ref)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.buf, want) {
			t.Fatalf("%s: encode gave %d bytes, proto.Marshal %d; they differ", c.name, len(e.buf), len(want))
		}
		got, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || &got[0] != &e.buf[0] || len(got) != len(e.buf) {
			t.Errorf("%s: proto.Marshal copied the encoded request (or lost it)", c.name)
		}
		if name := proto.MessageName(e); name != proto.MessageName(ref) {
			t.Errorf("%s: type name %q, want %q", c.name, name, proto.MessageName(ref))
		}
		var back wire.VerifyRequest
		if err := proto.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&back, ref) {
			t.Errorf("%s: read back as another request", c.name)
		}
		if err := checkShape(&back); err != nil {
			t.Errorf("%s: the verifier would refuse it: %v", c.name, err)
		}
	}
	// Appending to a buffer (a caller's MarshalAppend) copies after it.
	e.encode(2, pkts, data, sizes, flagged)
	out, err := proto.MarshalOptions{}.MarshalAppend([]byte{1, 2}, e)
	if err != nil || !bytes.Equal(out[:2], []byte{1, 2}) || !bytes.Equal(out[2:], e.buf) {
		t.Errorf("MarshalAppend: %v, %d bytes", err, len(out))
	}
}

// TestEncodeNoAllocs: encoding a pass into a buffer it has used before
// allocates nothing.
func TestEncodeNoAllocs(t *testing.T) {
	pool := newPool(t)
	b := pool.Get()
	defer b.Release()
	fill(t, b, 0, 64, 0)
	pkts, data, sizes := livePackets(b)
	sc := traceCtx{id: 3}.sc()
	e := newEncoded()
	e.encode(1, pkts, data, sizes, sc)
	if n := testing.AllocsPerRun(100, func() { e.encode(2, pkts, data, sizes, sc) }); n != 0 {
		t.Errorf("encode: %v allocations, want 0", n)
	}
}

// BenchmarkEncode is TryStart's work on a 1,024-packet pass after the
// parse: its live packets collected, the request encoded into a buffer
// used before.
func BenchmarkEncode(b *testing.B) {
	pool := newPool(b)
	src, bs, reset := passBatches(b, pool, 16)
	defer releasePass(src, bs)
	reset()
	sigverify.Parse(bs...)
	e := newEncoded()
	var pkts []*packet.Packet
	b.ReportAllocs()
	for b.Loop() {
		var data, sizes int
		pkts, data, sizes = collect(pkts[:0], bs)
		e.encode(1, pkts, data, sizes, trace.SpanContext{})
	}
	b.SetBytes(int64(len(e.buf)))
}
