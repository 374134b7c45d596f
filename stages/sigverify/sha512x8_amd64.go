//go:build amd64 && !purego

package sigverify

import "golang.org/x/sys/cpu"

//go:generate go run sha512x8_gen.go sha512x8_gen_x4.go

// hasSHA8 reports whether this CPU (and OS) runs sha512x8: AVX-512 F, and
// BW for the byte swap.
var hasSHA8 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// sha512x8 runs SHA-512 on each lane j of buf with blocks[j] > 0, over
// its first blocks[j] blocks (already padded), writing word w of lane
// j's hash to out[w][j]; maxBlocks is the largest blocks[j]. Lanes with
// no blocks get the initial hash value. Only where hasSHA8.
//
//go:noescape
func sha512x8(buf *[lanes][sha8Blocks * 128]byte, blocks *[lanes]uint64, maxBlocks int, out *[8][lanes]uint64)

// sha512x4 is sha512x8 on four lanes with AVX2 (the avx2x4 path; every
// CPU that runs it has AVX2): lanes j < 4 of buf and blocks, word w of
// lane j's hash written to out's word 8w + j (out points into a sha8's
// out, at its lane 0 or 4).
//
// The assembly takes out's rows to be 64 bytes apart: eight lanes.
const _ = uint(lanes-8) + uint(8-lanes)

//go:noescape
func sha512x4(buf *[4][sha8Blocks * 128]byte, blocks *[4]uint64, maxBlocks int, out *uint64)
