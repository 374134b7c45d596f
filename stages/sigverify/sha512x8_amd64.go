//go:build amd64 && !purego

package sigverify

import "golang.org/x/sys/cpu"

//go:generate go run sha512x8_gen.go

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
