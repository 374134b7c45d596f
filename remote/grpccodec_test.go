package remote

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/tpugo/tpu/remote/wire"
)

// TestDirtyPool: Get gives the length asked for, in a buffer of the
// smallest tier's capacity that holds it (larger than the largest
// tier: exactly its length), and a buffer put back is handed out again.
func TestDirtyPool(t *testing.T) {
	p := &dirtyPool{}
	for _, c := range []struct{ n, cap int }{
		{0, 1 << 10}, {1, 1 << 10}, {1 << 10, 1 << 10}, {1<<10 + 1, 1 << 11},
		{300_000, 1 << 19}, {1 << 20, 1 << 20}, {maxMessageBytes, maxMessageBytes},
		{1 << maxTierShift, 1 << maxTierShift}, {1<<maxTierShift + 1, 1<<maxTierShift + 1},
	} {
		b := p.Get(c.n)
		if len(*b) != c.n || cap(*b) != c.cap {
			t.Errorf("Get(%d): len %d cap %d, want cap %d", c.n, len(*b), cap(*b), c.cap)
		}
	}
	// sync.Pool may drop what it holds at any GC, so a miss is possible
	// but not every time.
	reused := false
	for range 10 {
		b := p.Get(5000)
		(*b)[0] = 42
		p.Put(b)
		if c := p.Get(6000); &(*c)[0] == &(*b)[0] {
			reused = true
			break
		}
	}
	if !reused {
		t.Error("a buffer put back was never handed out again")
	}
	p.Put(&[]byte{1, 2, 3}) // too small for a tier: dropped, no panic
	odd := make([]byte, 3000)
	p.Put(&odd) // not a tier's capacity: dropped
	if b := p.Get(3000); cap(*b) != 1<<12 {
		t.Errorf("Get(3000) after an odd Put: cap %d", cap(*b))
	}
}

// TestLinkCodec: a message marshalled by the links' codec reads back
// equal, whether below gRPC's pooling threshold or well above it, and
// its bytes are proto.Marshal's.
func TestLinkCodec(t *testing.T) {
	for _, n := range []int{10, 300_000} {
		req := &wire.VerifyRequest{Id: 7, Data: bytes.Repeat([]byte{0xab}, n), Sizes: []uint32{uint32(n)}}
		data, err := linkCodec{}.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := proto.Marshal(req)
		if got := data.Materialize(); !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: the codec's encoding differs from proto.Marshal's", n)
		}
		var back wire.VerifyRequest
		if err := (linkCodec{}).Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		data.Free()
		if !proto.Equal(&back, req) {
			t.Errorf("%d bytes: read back as another message", n)
		}
	}
	if _, err := (linkCodec{}).Marshal("not a message"); err == nil {
		t.Error("Marshal of a string: no error")
	}
	if err := (linkCodec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{1})}, 3); err == nil {
		t.Error("Unmarshal into an int: no error")
	}
}
