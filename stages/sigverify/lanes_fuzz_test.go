package sigverify

import (
	"math/rand/v2"
	"testing"
)

// FuzzLanesDifferential compares every lane path this CPU runs, with
// both equations (bothEquations), with voi's strict check, lane by lane, on groups of 1 to 16 signatures (9
// or more go through two passes at a time, verifyPair) the fuzzer shapes
// two ways: seed draws the group from diffCases (honest signatures and,
// mixed in, bit flips, S + L, small-order, non-canonical, random and
// mixed-order A and R), and raw, when it holds 96 bytes or more,
// replaces one lane's A, R and S with its first 96 bytes and the message
// with the rest, so that the fuzzer's own encodings meet the
// decompression and the checks in a group with honest neighbours.
func FuzzLanesDifferential(f *testing.F) {
	f.Add(uint64(1), uint8(7), []byte(nil))
	f.Add(uint64(2), uint8(0), []byte(nil))
	f.Add(uint64(3), uint8(4), make([]byte, 96))
	for i, e := range smallOrderEncodings {
		raw := make([]byte, 100)
		copy(raw, e[:])
		copy(raw[32:], e[:]) // R of small order too
		f.Add(uint64(100+i), uint8(i), raw)
	}
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, raw []byte) {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		cases := diffCases(t, rng, int(n%(2*lanes))+1)
		if len(raw) >= 96 {
			c := &cases[int(seed%uint64(len(cases)))]
			c.name = "raw from the fuzzer"
			copy(c.pub[:], raw[:32])
			copy(c.sig[:], raw[32:96])
			c.msg = raw[96:]
			c.want = voiBackend{}.Verify(&c.pub, c.msg, &c.sig)
		}
		for _, p := range bothEquations() {
			checks := checksOf(cases)
			lanesBackend{path: p}.lanes(checks)
			for i, c := range cases {
				if checks[i].ok != c.want {
					t.Errorf("path %s, %d lanes, lane %d, %s: lanes = %v, voi = %v", p.name, len(cases), i, c.name, checks[i].ok, c.want)
				}
			}
		}
	})
}
