package remote

import (
	"fmt"
	"math/bits"
	"sync"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// linkCodec is gRPC's proto codec, on the remote's links only
// (grpc.ForceCodecV2, grpc.ForceServerCodecV2), but for its buffers: it
// takes them from linkPool, which does not clear them; and a pass's
// request it sends from the leader's own buffer (marshalSpliced), not
// copied into one of gRPC's. gRPC's default
// pool clears every buffer it hands out, whole: a pass of a few hundred
// kilobytes, marshalled into a 1 MiB buffer, cost a megabyte of
// clearing on each side, more than copying the pass did. A marshal or a
// read overwrites the bytes it is given before anything reads them,
// and gRPC sends and reads only those.
type linkCodec struct{}

var _ encoding.CodecV2 = linkCodec{}

func (linkCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("remote: codec: %T is not a proto.Message", v)
	}
	if out, ok, err := marshalSpliced(v); ok || err != nil {
		return out, err
	}
	return marshalCopy(m)
}

// marshalCopy encodes m into a buffer of linkPool, as gRPC's own codec
// does into its pool's.
func marshalCopy(m proto.Message) (mem.BufferSlice, error) {
	// Size then UseCachedSize, as gRPC's own codec does: the sizes are
	// computed once.
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true}
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := linkPool.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		linkPool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, linkPool)}, nil
}

func (linkCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("remote: codec: %T is not a proto.Message", v)
	}
	buf := data.MaterializeToBuffer(linkPool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// Name is the content subtype both sides name: gRPC's proto codec's,
// whose bytes this one's are.
func (linkCodec) Name() string { return "proto" }

// linkPool is the remote's gRPC buffer pool (linkCodec's, and the
// transports' reads, experimental.WithBufferPool).
var linkPool mem.BufferPool = &dirtyPool{}

// dirtyPool is a mem.BufferPool of power-of-two buffers that hands them
// out as they were left: the caller overwrites what it reads.
type dirtyPool struct {
	tiers [maxTierShift - minTierShift + 1]sync.Pool
}

// The tiers' capacities: 1 KiB to 16 MiB. A larger buffer (gRPC refuses
// messages over maxMessageBytes) is allocated and left to the GC.
const (
	minTierShift = 10
	maxTierShift = 24
)

// tier returns the index of the smallest tier that holds n bytes.
func tier(n int) int {
	if n <= 1<<minTierShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minTierShift
}

// Get returns a buffer of length n, its bytes whatever they were.
func (p *dirtyPool) Get(n int) *[]byte {
	t := tier(n)
	if t >= len(p.tiers) {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[t].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(t+minTierShift))
	return &b
}

// Put keeps b for a later Get, if its capacity is a tier's.
func (p *dirtyPool) Put(b *[]byte) {
	c := cap(*b)
	if c < 1<<minTierShift || c&(c-1) != 0 {
		return
	}
	if t := tier(c); t < len(p.tiers) {
		p.tiers[t].Put(b)
	}
}
