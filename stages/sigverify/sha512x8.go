package sigverify

import "encoding/binary"

// sha8Blocks is the most SHA-512 blocks one lane of sha8 takes: R || A
// || a message, padded. A packet's message (under 1,232 bytes) takes at
// most 10; a longer one is hashed one at a time (hashK).
const sha8Blocks = 11

// sha8 hashes up to eight R || A || message streams at once on the
// ifma8 path (sha512x8, AVX-512) and the avx2x4 path (sha512x4 on each
// half, AVX2): each lane's stream is copied, padded
// as SHA-512 pads it, into a buffer of its own, and the compression
// function runs on the eight together, each lane for its own number of
// blocks. Hashing was 7.5% of a verifier's CPU one signature at a time
// (crypto/sha512's AVX2 code, about 500 ns a transfer's three blocks).
type sha8 struct {
	buf    [lanes][sha8Blocks * 128]byte
	blocks [lanes]uint64    // blocks of lane j's padded stream; 0: none
	out    [8][lanes]uint64 // the hash's eight words, lane by lane
}

// set stages lane j's stream r || a || msg and reports true, or reports
// false (and leaves the lane out) when it is too long for sha8Blocks.
func (h *sha8) set(j int, r, a *[32]byte, msg []byte) bool {
	n := 64 + len(msg)
	nb := (n + 1 + 16 + 127) / 128 // 0x80, the 128-bit length
	if nb > sha8Blocks {
		h.blocks[j] = 0
		return false
	}
	b := h.buf[j][:nb*128]
	copy(b, r[:])
	copy(b[32:], a[:])
	copy(b[64:], msg)
	b[n] = 0x80
	clear(b[n+1 : len(b)-8]) // with the length's high 64 bits
	binary.BigEndian.PutUint64(b[len(b)-8:], uint64(n)*8)
	h.blocks[j] = uint64(nb)
	return true
}

// skip leaves lane j out of the next run.
func (h *sha8) skip(j int) { h.blocks[j] = 0 }

// run hashes the lanes set since the last run: with sha512x8 (kind
// hashX8) or with sha512x4 on each half (hashX4).
func (h *sha8) run(kind int) {
	if kind == hashX8 {
		sha512x8(&h.buf, &h.blocks, int(most(h.blocks[:])), &h.out)
		return
	}
	for l := 0; l < lanes; l += 4 {
		sha512x4((*[4][sha8Blocks * 128]byte)(h.buf[l:l+4]), (*[4]uint64)(h.blocks[l:l+4]),
			int(most(h.blocks[l:l+4])), &h.out[0][l])
	}
}

// most is the largest of n.
func most(n []uint64) uint64 {
	m := uint64(0)
	for _, v := range n {
		m = max(m, v)
	}
	return m
}

// sum writes lane j's hash.
func (h *sha8) sum(j int, d *[64]byte) {
	for w := range h.out {
		binary.BigEndian.PutUint64(d[8*w:], h.out[w][j])
	}
}
