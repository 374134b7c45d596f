package sigverify

import (
	"bytes"
	"testing"
	"unsafe"
)

// prefetch is a hint: it changes no byte, faults on no address (nil,
// unmapped, a range past a buffer's end), and returns for a length of 0;
// a keySet's prefetch asks for no more than the set itself.
func TestPrefetchHarmless(t *testing.T) {
	buf := bytes.Repeat([]byte{0xa5}, 4096)
	want := bytes.Clone(buf)
	prefetch(unsafe.Pointer(&buf[0]), uintptr(len(buf)))
	prefetch(unsafe.Pointer(&buf[4095]), 1<<20) // runs a megabyte past the end
	prefetch(unsafe.Pointer(&buf[17]), 0)
	prefetch(nil, 0)
	prefetch(nil, 1<<16)
	if !bytes.Equal(buf, want) {
		t.Fatal("prefetch changed the bytes it was given")
	}
	if prefetchBytes > unsafe.Sizeof(keySet{}) || prefetchBytes <= unsafe.Offsetof(keySet{}.way) {
		t.Fatalf("a set's prefetch asks for %d bytes of its %d: want its header and first way", prefetchBytes, unsafe.Sizeof(keySet{}))
	}
}
