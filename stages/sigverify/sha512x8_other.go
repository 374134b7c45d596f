//go:build !amd64 || purego

package sigverify

// hasSHA8 is false: sha512x8 is amd64 assembly.
const hasSHA8 = false

func sha512x8(buf *[lanes][sha8Blocks * 128]byte, blocks *[lanes]uint64, maxBlocks int, out *[8][lanes]uint64) {
	panic("sigverify: sha512x8 without AVX-512")
}

func sha512x4(buf *[4][sha8Blocks * 128]byte, blocks *[4]uint64, maxBlocks int, out *uint64) {
	panic("sigverify: sha512x4 without AVX2")
}
