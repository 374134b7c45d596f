package sigverify

import (
	"crypto/sha512"
	"math/rand/v2"
	"testing"
)

// shaKinds are the hashes of eight this CPU runs, by name.
func shaKinds() map[string]int {
	k := map[string]int{}
	if hasSHA8 {
		k["x8"] = hashX8
	}
	if hasAVX2 {
		k["x4"] = hashX4
	}
	return k
}

// TestSHA512x8 holds sha512x8 and sha512x4 to crypto/sha512 lane by
// lane: every stream length from an empty message to the longest a lane
// takes (around each block boundary the padding moves across), lanes of
// different lengths in one run, and lanes left out.
func TestSHA512x8(t *testing.T) {
	if !hasSHA8 {
		t.Log("no AVX-512 F and BW on this CPU: sha512x8 cannot run here (the ifma8 path, if any, hashes with sha512x4)")
	}
	if !hasAVX2 {
		t.Skip("no AVX2 on this CPU: neither sha512x8 nor sha512x4 can run here (the lanes hash one signature at a time)")
	}
	for name, kind := range shaKinds() {
		t.Run(name, func(t *testing.T) { testSHA8(t, kind) })
	}
}

func testSHA8(t *testing.T, kind int) {
	rng := rand.New(rand.NewPCG(7, 8))
	var h sha8
	check := func(name string, r, a *[lanes][32]byte, msgs *[lanes][]byte, in *[lanes]bool) {
		t.Helper()
		for j := range lanes {
			if !in[j] {
				h.skip(j)
			} else if !h.set(j, &r[j], &a[j], msgs[j]) {
				t.Fatalf("%s: lane %d: a %d-byte message did not fit", name, j, len(msgs[j]))
			}
		}
		h.run(kind)
		for j := range lanes {
			if !in[j] {
				// A lane left out keeps the initial hash value: no
				// other lane's (or half's) words were written there.
				for w := range h.out {
					if h.out[w][j] != sha512IV[w] {
						t.Fatalf("%s: lane %d, left out, has word %d %#x", name, j, w, h.out[w][j])
					}
				}
				continue
			}
			want := sha512.Sum512(append(append(r[j][:], a[j][:]...), msgs[j]...))
			var got [64]byte
			h.sum(j, &got)
			if got != want {
				t.Fatalf("%s: lane %d (%d-byte message): hash differs from crypto/sha512", name, j, len(msgs[j]))
			}
		}
	}
	var r, a [lanes][32]byte
	var msgs [lanes][]byte
	var all [lanes]bool
	for j := range all {
		all[j] = true
	}
	longest := sha8Blocks*128 - 17 - 64
	buf := make([]byte, longest)
	for n := 0; n <= longest; n++ {
		for j := range lanes {
			fill(rng, r[j][:])
			fill(rng, a[j][:])
			msgs[j] = buf[:n]
		}
		fill(rng, buf[:n])
		check("equal lengths", &r, &a, &msgs, &all)
	}
	// One half staged and the other left out whole (sha512x4 runs it
	// with no blocks), each way round.
	for half := range 2 {
		var in [lanes]bool
		for j := range lanes {
			in[j] = j/4 == half
			fill(rng, r[j][:])
			fill(rng, a[j][:])
			msgs[j] = make([]byte, rng.IntN(longest+1))
			fill(rng, msgs[j])
		}
		check("one half", &r, &a, &msgs, &in)
	}
	for range 2000 {
		var in [lanes]bool
		for j := range lanes {
			in[j] = rng.IntN(4) != 0
			fill(rng, r[j][:])
			fill(rng, a[j][:])
			msgs[j] = make([]byte, rng.IntN(longest+1))
			fill(rng, msgs[j])
		}
		check("mixed lengths", &r, &a, &msgs, &in)
	}
	if h.set(0, &r[0], &a[0], make([]byte, longest+1)) {
		t.Fatalf("a %d-byte message fit in %d blocks", longest+1, sha8Blocks)
	}
}

// sha512IV is SHA-512's initial hash value (FIPS 180-4, 5.3.5).
var sha512IV = [8]uint64{
	0x6a09e667f3bcc908, 0xbb67ae8584caa73b, 0x3c6ef372fe94f82b, 0xa54ff53a5f1d36f1,
	0x510e527fade682d1, 0x9b05688c2b3e6c1f, 0x1f83d9abfb41bd6b, 0x5be0cd19137e2179,
}

func fill(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

// BenchmarkSHA512x8 hashes eight transfers' R || A || message (a 200-byte
// message: three blocks each) at once, with sha512x8 (x8) and with
// sha512x4 (x4), against crypto/sha512 one at a time, in one op each,
// per signature.
func BenchmarkSHA512x8(b *testing.B) {
	var r, a [32]byte
	msg := make([]byte, 200)
	for _, name := range []string{"x8", "x4"} {
		b.Run(name, func(b *testing.B) {
			kind, ok := shaKinds()[name]
			if !ok {
				b.Skip("not on this CPU (x8: AVX-512 F and BW; x4: AVX2)")
			}
			var h sha8
			var d [64]byte
			b.ReportAllocs()
			for b.Loop() {
				for j := range lanes {
					h.set(j, &r, &a, msg)
				}
				h.run(kind)
				for j := range lanes {
					h.sum(j, &d)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lanes), "ns/sig")
		})
	}
	b.Run("stdlib", func(b *testing.B) {
		h := sha512.New()
		var d [64]byte
		b.ReportAllocs()
		for b.Loop() {
			for range lanes {
				h.Reset()
				h.Write(r[:])
				h.Write(a[:])
				h.Write(msg)
				h.Sum(d[:0])
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lanes), "ns/sig")
	})
}
