//go:build amd64 && !purego

package sigverify

import "golang.org/x/sys/cpu"

//go:generate go run lanes_ifma_gen.go lanes_ifma_gen_lanes.go
//go:generate go run lanes_avx2_gen.go lanes_avx2_gen_point.go lanes_avx2_gen_lanes.go

// hasIFMA reports whether this CPU (and OS) runs the ifma8 path: AVX-512
// F for the ZMM registers, IFMA for the 52-bit multiplies and DQ for
// VPMULLQ (every CPU with IFMA so far has DQ).
var hasIFMA = cpu.X86.HasAVX512F && cpu.X86.HasAVX512IFMA && cpu.X86.HasAVX512DQ

// hasAVX2 reports whether this CPU (and OS) runs the avx2x4 path.
var hasAVX2 = cpu.X86.HasAVX2

// ifmaPath is the 8-lane AVX-512 IFMA path. A pass took about 2.2 voi
// signatures' time when this was set (BENCHMARKS.md, issue 13), so 3 or
// more go in the lanes; issue 25 made a pass cheaper (about 1.4 voi
// signatures' time for eight, in pairs), so 2 may pay now too: not
// measured, left at 3. It checks the split equation since e = d S mod L
// went from voi's 280 ns to mulModL's 96: split/single 0.90-0.98, median
// 0.93, in BenchmarkVerifyMany's interleaved runs (it was 0.91-1.05
// before, and the single equation was kept).
var ifmaPath = &lanePath{name: "ifma8", kind: pathIFMA, voiBelow: 3, halves: true, comb: true, hash: ifmaHash}

// avx2Path is the AVX2 path: 4 lanes per register, two registers per
// limb of an fe8, on the split equation. A pass takes about 3.8 voi
// signatures' time (2.06-2.15x voi for 64 signatures, 8 passes, in
// BenchmarkVerifyMany's interleaved runs of 2026-12-06; 4-4.5 before
// the split equation), so 4 or more go in the lanes. It has no combs:
// with its field operations called one at a time (no radix-2^25.5
// ladder), picks in Go and no prefetch, a comb's check took 13.4-14.5
// us against the split equation's 15.5-17.3 with 64 keys, but
// 15.9-18.4 against 15.3-17.6 with 1,024, whose combs are in memory
// (2026-12-07, a Zen 4 machine with AVX-512 off).
var avx2Path = &lanePath{name: "avx2x4", kind: pathAVX2, voiBelow: 4, halves: true, hash: hashX4}

// ifmaHash is the ifma8 path's hashing: sha512x8 where the CPU has
// AVX-512 BW (every CPU with IFMA so far), else sha512x4 where it has
// AVX2 (every one with AVX-512, unless a VM hides it), else one at a
// time.
var ifmaHash = func() int {
	switch {
	case hasSHA8:
		return hashX8
	case hasAVX2:
		return hashX4
	}
	return hashEach
}()

// bestPath is the fastest lane path this CPU runs.
var bestPath = func() *lanePath {
	switch {
	case hasIFMA:
		return ifmaPath
	case hasAVX2:
		return avx2Path
	}
	return portablePath
}()

// lanePaths are the lane paths this CPU runs, portable first.
func lanePaths() []*lanePath {
	ps := []*lanePath{portablePath}
	if hasAVX2 {
		ps = append(ps, avx2Path)
	}
	if hasIFMA {
		ps = append(ps, ifmaPath)
	}
	return ps
}

// mulIFMA sets z = a * b, as mulGeneric, bit for bit. Only where hasIFMA.
//
//go:noescape
func mulIFMA(z, a, b *fe8)

// sqrNIFMA sets z = z^(2^n), n >= 1, as n calls of sqrIFMA, bit for
// bit, in one call. Only where hasIFMA.
//
//go:noescape
func sqrNIFMA(z *fe8, n int)

// sqrN2IFMA is sqrNIFMA on z1 and z2, their squares interleaved. Only
// where hasIFMA.
//
//go:noescape
func sqrN2IFMA(z1, z2 *fe8, n int)

// mul2IFMA sets z = 2 a b, as mul2Generic, bit for bit. Only where
// hasIFMA.
//
//go:noescape
func mul2IFMA(z, a, b *fe8)

// paddMixedIFMA sets r = p + q for a q whose Z2 is 1, as paddMixedOps,
// bit for bit. Only where hasIFMA.
//
//go:noescape
func paddMixedIFMA(r, p *ext8, q *cached8)

// paddMixedXYZIFMA is paddMixedIFMA without T (left stale). Only where
// hasIFMA.
//
//go:noescape
func paddMixedXYZIFMA(r, p *ext8, q *cached8)

// mulWideIFMA sets z = a * b, wide, as mulWideGeneric, bit for bit.
// Only where hasIFMA.
//
//go:noescape
func mulWideIFMA(z, a, b *fe8)

// mul2WideIFMA sets z = 2 a b, wide, as mul2WideGeneric, bit for bit.
// Only where hasIFMA.
//
//go:noescape
func mul2WideIFMA(z, a, b *fe8)

// subWideIFMA sets z = a - b, a and b possibly wide, as subWideGeneric,
// bit for bit. Only where hasIFMA.
//
//go:noescape
func subWideIFMA(z, a, b *fe8)

// sqr2IFMA sets z = 2 a a, as mul2IFMA(z, a, a). Only where hasIFMA.
//
//go:noescape
func sqr2IFMA(z, a *fe8)

// canonicalIFMA sets every lane of z to that lane of a reduced mod p,
// as fe8.canonical, bit for bit. Only where hasIFMA.
//
//go:noescape
func canonicalIFMA(z, a *fe8)

// addIFMA sets z = a + b, as fe8.add. Only where hasIFMA.
//
//go:noescape
func addIFMA(z, a, b *fe8)

// subIFMA sets z = a - b, as fe8.sub. Only where hasIFMA.
//
//go:noescape
func subIFMA(z, a, b *fe8)

// sqrIFMA sets z = a * a, as mulIFMA(z, a, a), bit for bit. Only where
// hasIFMA.
//
//go:noescape
func sqrIFMA(z, a *fe8)

// dblIFMA sets r = 2p as ifmaPath's dbl(r, p, true), bit for bit, in one
// call. Only where hasIFMA.
//
//go:noescape
func dblIFMA(r, p *ext8)

// dblXYZIFMA is dblIFMA without T: as ifmaPath's dbl(r, p, false).
//
//go:noescape
func dblXYZIFMA(r, p *ext8)

// paddIFMA sets r = p + q as ifmaPath's padd, bit for bit, in one call.
// Only where hasIFMA.
//
//go:noescape
func paddIFMA(r, p *ext8, q *cached8)

// paddXYZIFMA is paddIFMA without T (left stale): for an addition that
// a doubling follows, which reads X, Y, Z only.
//
//go:noescape
func paddXYZIFMA(r, p *ext8, q *cached8)

// pickIFMA sets c to t.pick(c, d)'s result, bit for bit, where tl is
// t by lane (tableLanesIFMA): it loads each lane's laneEntry form and
// transposes the eight into limb rows. Each d[j] must lie in [-8, 8].
// Only where hasIFMA.
//
//go:noescape
func pickIFMA(c *cached8, tl *laneTable, d *[lanes]int8)

// pickBaseIFMA sets c to pickBase(c, t, d)'s result, bit for bit, as
// pickIFMA does, from t (baseTable or baseTable128). Each d[j] must lie in [-128, 128]. Only
// where hasIFMA.
//
//go:noescape
func pickBaseIFMA(c *cached8, t *[129]laneEntry, d *[lanes]int8)

// pickCombIFMA sets c to pickComb's result, bit for bit, lane j's
// entry from its own table t[j]. Each d[j] must lie in [-8, 8]. Only
// where hasIFMA.
//
//go:noescape
func pickCombIFMA(c *cached8, t *[lanes]*[9]combEntry, d *[lanes]int8)

// prefetchCombIFMA asks for the lines that pickCombIFMA(c, &t[m],
// &kd[16m + i]) reads for each m, d being &kd[i] (prefetch). Only
// where hasIFMA.
//
//go:noescape
func prefetchCombIFMA(t *combPass, d *[lanes]int8)

// tableLanesIFMA sets tl to t by lane: entry k of lane j in both of its
// laneEntry forms. Only where hasIFMA.
//
//go:noescape
func tableLanesIFMA(tl *laneTable, t *table8)

// mulAVX2 sets z = a * b, loose in and out, the same value as mulGeneric
// (not the same limbs: it multiplies in radix 2^25.5). Only where
// hasAVX2.
//
//go:noescape
func mulAVX2(z, a, b *fe8)

// sqrAVX2 sets z = a * a, as mulAVX2(z, a, a), bit for bit. Only where
// hasAVX2.
//
//go:noescape
func sqrAVX2(z, a *fe8)

// canonicalAVX2 sets every lane of z to that lane of a reduced mod p,
// as fe8.canonical, bit for bit. Only where hasAVX2.
//
//go:noescape
func canonicalAVX2(z, a *fe8)

// pickAVX2 sets c to t.pick(c, d)'s result, bit for bit, gathering
// each limb row's lanes. Each d[j] must lie in [-8, 8]. Only where
// hasAVX2.
//
//go:noescape
func pickAVX2(c *cached8, t *table8, d *[lanes]int8)

// addAVX2 sets z = a + b, as addGeneric, bit for bit. Only where hasAVX2.
//
//go:noescape
func addAVX2(z, a, b *fe8)

// subAVX2 sets z = a - b, as subGeneric, bit for bit. Only where hasAVX2.
//
//go:noescape
func subAVX2(z, a, b *fe8)

// paddAVX2 sets r = p + q as avx2Path's paddOps, the same value, in one
// call; r may alias p. Only where hasAVX2.
//
//go:noescape
func paddAVX2(r, p *ext8, q *cached8)

// sqrNAVX2 sets z = a^(2^n), n >= 1, the same value as n calls of
// sqrAVX2, staying in radix 2^25.5 between the squares; z may alias a.
// Only where hasAVX2.
//
//go:noescape
func sqrNAVX2(z, a *fe8, n int)

// dbl25AVX2 sets p = 2p, the value of dblOps(p, p, true) on the ext8 p
// stands for. Only where hasAVX2.
//
//go:noescape
func dbl25AVX2(p *ext25)

// dblXYZ25AVX2 is dbl25AVX2 without T (left stale): dblOps(p, p, false).
//
//go:noescape
func dblXYZ25AVX2(p *ext25)

// padd25AVX2 sets p = p + q, as paddAVX2. Only where hasAVX2.
//
//go:noescape
func padd25AVX2(p *ext25, q *cached8)

// padd25MixedAVX2 is padd25AVX2 for a q whose Z2 is 1, as paddMixedOps.
// Only where hasAVX2.
//
//go:noescape
func padd25MixedAVX2(p *ext25, q *cached8)

// paddXYZ25MixedAVX2 is padd25MixedAVX2 without T (left stale). Only
// where hasAVX2.
//
//go:noescape
func paddXYZ25MixedAVX2(p *ext25, q *cached8)

// paddXYZ25AVX2 is padd25AVX2 without T (left stale): for an addition
// that a doubling follows, which reads X, Y, Z only.
//
//go:noescape
func paddXYZ25AVX2(p *ext25, q *cached8)

// toExt25AVX2 sets r to p in radix 2^25.5. Only where hasAVX2.
//
//go:noescape
func toExt25AVX2(r *ext25, p *ext8)

// fromExt25AVX2 sets r to p in radix 2^51, loose. Only where hasAVX2.
//
//go:noescape
func fromExt25AVX2(r *ext8, p *ext25)
