package sigverify

import "math/big"

// lanePath is one implementation of the lane field multiplication: the
// portable Go reference or an assembly path. Everything else of the lane
// algorithm is shared Go over fe8. mul and sqr dispatch with a switch
// rather than through function values, so that the fe8 temporaries of
// the callers stay on the stack (a call through a function value makes
// its pointer arguments escape).
type lanePath struct {
	name string
	kind int // pathPortable, pathIFMA or pathAVX2
	// voiBelow is the smallest number of signatures for which one pass
	// of this path (it costs the same for 1 to 8) is faster than voi one
	// by one; a last group of fewer goes to voi. 0: never.
	voiBelow int
	// halves: the path checks the split equation (verifyHalves), which
	// saves half the doublings for fixed costs (the split of k, e = d S,
	// R decompressed), rather than the single one. Every path does now;
	// the single equation stays as the tests' second opinion and for a
	// path whose doublings are cheap enough (ifma8's were, until e = d S
	// got cheaper: BENCHMARKS.md).
	halves bool
	// comb: with a key cache, a key seen again gets a comb of its own
	// tables (lanes_comb.go), and its signatures take the single
	// equation with 60 doublings. Not avx2x4 (avx2Path says why).
	comb bool
	// hash is how the path hashes R || A || message: hashEach, one at a
	// time (crypto/sha512), or eight at a time (sha8), all in one run of
	// sha512x8 (hashX8, AVX-512 BW: ifma8) or in two of sha512x4 (hashX4,
	// AVX2: avx2x4, and ifma8 on a CPU without AVX-512 BW).
	hash int
}

const (
	hashEach = iota
	hashX8
	hashX4
)

const (
	pathPortable = iota
	pathIFMA
	pathAVX2
)

// portablePath is the reference the others are tested against; it is
// slower than voi even for 8 signatures, but someone who asks for it
// gets it, so it never hands a group to voi.
var portablePath = &lanePath{name: "portable", kind: pathPortable, halves: true, comb: true}

// mul sets z = a * b; loose in and out; z may alias a or b.
func (f *lanePath) mul(z, a, b *fe8) {
	switch f.kind {
	case pathIFMA:
		mulIFMA(z, a, b)
	case pathAVX2:
		mulAVX2(z, a, b)
	default:
		mulGeneric(z, a, b)
	}
}

// add sets z = a + b; z may alias a or b.
func (f *lanePath) add(z, a, b *fe8) {
	switch f.kind {
	case pathIFMA:
		addIFMA(z, a, b)
	case pathAVX2:
		addAVX2(z, a, b)
	default:
		addGeneric(z, a, b)
	}
}

// sub sets z = a - b; z may alias a or b.
func (f *lanePath) sub(z, a, b *fe8) {
	switch f.kind {
	case pathIFMA:
		subIFMA(z, a, b)
	case pathAVX2:
		subAVX2(z, a, b)
	default:
		subGeneric(z, a, b)
	}
}

// neg sets z = -a.
func (f *lanePath) neg(z, a *fe8) {
	var zero fe8
	f.sub(z, &zero, a)
}

// sqr sets z = a * a.
func (f *lanePath) sqr(z, a *fe8) {
	switch f.kind {
	case pathIFMA:
		sqrIFMA(z, a)
	case pathAVX2:
		sqrAVX2(z, a)
	default:
		sqrGeneric(z, a)
	}
}

// mul2 sets z = 2 a b; loose in and out. ifma8 and portable double the
// folded columns before their carry pass; avx2x4 multiplies and adds.
func (f *lanePath) mul2(z, a, b *fe8) {
	switch f.kind {
	case pathIFMA:
		mul2IFMA(z, a, b)
	case pathAVX2:
		mulAVX2(z, a, b)
		addAVX2(z, z, z)
	default:
		mul2Generic(z, a, b)
	}
}

// sqr2 sets z = 2 a a, as mul2.
func (f *lanePath) sqr2(z, a *fe8) {
	switch f.kind {
	case pathIFMA:
		sqr2IFMA(z, a)
	case pathAVX2:
		sqrAVX2(z, a)
		addAVX2(z, z, z)
	default:
		sqr2Generic(z, a)
	}
}

// ext8 is eight points in extended coordinates (X:Y:Z:T), x = X/Z,
// y = Y/Z, xy = T/Z, on -x^2 + y^2 = 1 + d x^2 y^2.
type ext8 struct{ X, Y, Z, T fe8 }

// ext25 is an ext8 as the avx2x4 assembly keeps it between operations:
// each coordinate in radix 2^25.5 (10 limbs of 26 and 25 bits), as two
// halves of 4 lanes, limb-major, at the first 32-byte boundary inside
// (the assembly rounds the address up; hence the 32 bytes more). Only
// that assembly reads or writes it; toExt25AVX2 and fromExt25AVX2
// convert.
type ext25 [4*2*10*4 + 4]uint64

// cached8 is eight points in the form additions take: (Y+X, Y-X, 2Z, 2dT).
type cached8 struct{ YpX, YmX, Z2, T2d fe8 }

// Curve constants, computed at init from their definitions with math/big.
var (
	feD      fe8      // d = -121665/121666
	fe2D     fe8      // 2d
	feSqrtM1 fe8      // sqrt(-1) = 2^((p-1)/4)
	feInvD   fe8      // 1/d
	feOne    fe8      // 1
	feHalf   fe8      // 1/2 = (p + 1) / 2
	baseEnc  [32]byte // the canonical encoding of B
)

func init() {
	p := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	d := new(big.Int).ModInverse(big.NewInt(121666), p)
	d.Mul(d, big.NewInt(-121665)).Mod(d, p)
	e := new(big.Int).Rsh(new(big.Int).Sub(p, big.NewInt(1)), 2)
	i := new(big.Int).Exp(big.NewInt(2), e, p)
	broadcastBig(&feD, d)
	broadcastBig(&fe2D, new(big.Int).Mod(new(big.Int).Lsh(d, 1), p))
	broadcastBig(&feInvD, new(big.Int).ModInverse(d, p))
	broadcastBig(&feSqrtM1, i)
	feOne.broadcast(1)
	broadcastBig(&feHalf, new(big.Int).Rsh(new(big.Int).Add(p, big.NewInt(1)), 1))

	// B: y = 4/5, x the even root of (y^2 - 1) / (d y^2 + 1).
	y := new(big.Int).ModInverse(big.NewInt(5), p)
	y.Mul(y, big.NewInt(4)).Mod(y, p)
	yy := new(big.Int).Mul(y, y)
	u := new(big.Int).Sub(yy, big.NewInt(1))
	v := new(big.Int).Add(new(big.Int).Mul(d, yy), big.NewInt(1))
	xx := new(big.Int).Mul(u, new(big.Int).ModInverse(v.Mod(v, p), p))
	x := new(big.Int).ModSqrt(xx.Mod(xx, p), p)
	if x.Bit(0) == 1 {
		x.Sub(p, x)
	}
	var b ext8
	broadcastBig(&b.X, x)
	broadcastBig(&b.Y, y)
	b.Z = feOne
	portablePath.mul(&b.T, &b.X, &b.Y)
	baseEnc = b.Y.bytes(0)
	for _, t := range []*[129]laneEntry{&baseTable, &baseTable64, &baseTable128, &baseTable192} {
		buildBaseTable(t, &b)
		for i := 0; i < 64; i++ {
			portablePath.dbl(&b, &b, true)
		}
	}
}

// buildBaseTable sets t to [0]P ... [128]P, P in every lane of b, each
// entry with Z = 1 and the whole cached form halved: ((y+x)/2, (y-x)/2,
// 1, d x y), where Z2 is exactly 1 (paddBase relies on it). An addition
// scales its result by the scale of the cached point it adds, so any
// uniform scale gives the same point.
func buildBaseTable(t *[129]laneEntry, b *ext8) {
	// [1]P ... [8]P in all lanes, then lane j walks [j+1]P, [j+9]P, ...
	var q ext8
	var t8 [8]cached8
	var walk ext8
	q = *b
	for k := range t8 {
		if k > 0 {
			portablePath.padd(&q, &q, &t8[0])
		}
		portablePath.toCached(&t8[k], &q)
		walk.X.copyLane(k, &q.X)
		walk.Y.copyLane(k, &q.Y)
		walk.Z.copyLane(k, &q.Z)
		walk.T.copyLane(k, &q.T)
	}
	// The identity, (1, 1, 2, 0) halved.
	var id [20]uint64
	for l := 0; l < 5; l++ {
		id[l], id[5+l] = feHalf[l][0], feHalf[l][0]
	}
	id[10] = 1
	t[0] = laneEntry{id, id}
	for n := 1; n < len(t); n += lanes {
		// Each entry with Z = 1, halved (Z2 = 1), for paddBase.
		var c cached8
		var zi, negT fe8
		portablePath.invert(&zi, &walk.Z)
		portablePath.halvedCached(&c, &walk, &zi)
		portablePath.neg(&negT, &c.T2d)
		for j := 0; j < lanes; j++ {
			e := &t[n+j]
			for l := 0; l < 5; l++ {
				e[0][l], e[0][5+l], e[0][10+l], e[0][15+l] = c.YpX[l][j], c.YmX[l][j], c.Z2[l][j], c.T2d[l][j]
				e[1][l], e[1][5+l], e[1][10+l], e[1][15+l] = c.YmX[l][j], c.YpX[l][j], c.Z2[l][j], negT[l][j]
			}
		}
		portablePath.padd(&walk, &walk, &t8[7])
	}
}

// halvedCached sets c to p's cached form with Z = 1 (zi is 1/Z) and
// halved, ((y+x)/2, (y-x)/2, 1, d x y): the base tables' and the combs'
// entries.
func (f *lanePath) halvedCached(c *cached8, p *ext8, zi *fe8) {
	var aff ext8
	f.mul(&aff.X, &p.X, zi)
	f.mul(&aff.Y, &p.Y, zi)
	aff.Z = feOne
	f.mul(&aff.T, &aff.X, &aff.Y)
	f.toCached(c, &aff)
	f.mul(&c.YpX, &c.YpX, &feHalf)
	f.mul(&c.YmX, &c.YmX, &feHalf)
	f.mul(&c.T2d, &c.T2d, &feHalf)
	c.Z2 = feOne
}

func broadcastBig(z *fe8, v *big.Int) {
	var b [32]byte
	v.FillBytes(b[:])
	for l, r := 0, 31; l < r; l, r = l+1, r-1 {
		b[l], b[r] = b[r], b[l]
	}
	for j := 0; j < lanes; j++ {
		z.setLane(j, &b)
	}
}

// toCached sets c to p's cached form.
func (f *lanePath) toCached(c *cached8, p *ext8) {
	f.add(&c.YpX, &p.Y, &p.X)
	f.sub(&c.YmX, &p.Y, &p.X)
	f.add(&c.Z2, &p.Z, &p.Z)
	f.mul(&c.T2d, &p.T, &fe2D)
}

// fromCached sets p to c's point in extended coordinates, scaled by 2:
// (Y+X) - (Y-X), (Y+X) + (Y-X), 2Z and 2dT / d. The ladders start with
// it, where adding the first pick to the identity took a whole addition.
// A negative digit's pick (Y+X and Y-X swapped, 2dT negated) gives the
// negated point, the identity's (1, 1, 2, 0) the identity.
func (f *lanePath) fromCached(p *ext8, c *cached8) {
	f.sub(&p.X, &c.YpX, &c.YmX)
	f.add(&p.Y, &c.YpX, &c.YmX)
	p.Z = c.Z2
	f.mul(&p.T, &c.T2d, &feInvD)
}

// padd sets r = p + q (extended + cached, 8M); r may alias p. The ifma8
// and avx2x4 paths do it in one assembly call, the same operations as
// paddOps.
func (f *lanePath) padd(r, p *ext8, q *cached8) {
	switch f.kind {
	case pathIFMA:
		paddIFMA(r, p, q)
	case pathAVX2:
		paddAVX2(r, p, q)
	default:
		f.paddOps(r, p, q)
	}
}

// paddXYZ is padd where T of the result is not read (a doubling or the
// end follows): the ifma8 path leaves it out (7M), the others compute
// it.
func (f *lanePath) paddXYZ(r, p *ext8, q *cached8) {
	if f.kind == pathIFMA {
		paddXYZIFMA(r, p, q)
		return
	}
	f.padd(r, p, q)
}

// pick sets c to digit d[j] times t's point, lane by lane (table8.pick);
// the ifma8 path picks from tl, t by lane (tableLanesIFMA), in assembly,
// and avx2x4 gathers from t (pickAVX2).
func (f *lanePath) pick(c *cached8, t *table8, tl *laneTable, d *[lanes]int8) {
	switch f.kind {
	case pathIFMA:
		pickIFMA(c, tl, d)
	case pathAVX2:
		pickAVX2(c, t, d)
	default:
		t.pick(c, d)
	}
}

// tableLanes sets tl to t by lane for the ifma8 path's picks; the other
// paths pick from t and leave tl alone.
func (f *lanePath) tableLanes(tl *laneTable, t *table8) {
	if f.kind == pathIFMA {
		tableLanesIFMA(tl, t)
	}
}

// pickBase sets c to digit d[j] times t's point (baseTable or
// baseTable128), lane by lane (pickBase); the ifma8 path in assembly.
func (f *lanePath) pickBase(c *cached8, t *[129]laneEntry, d *[lanes]int8) {
	if f.kind == pathIFMA {
		pickBaseIFMA(c, t, d)
		return
	}
	pickBase(c, t, d)
}

// paddOps is padd by calls to the path's field operations. A, B, C
// and D only feed sums and differences, so they are wide (mulW).
func (f *lanePath) paddOps(r, p *ext8, q *cached8) { f.paddOpsD(r, p, q, false) }

// paddMixedOps is paddOps for a q whose Z2 is 1 (a base table's entry,
// buildBaseTable): D is Z, not Z Z2.
func (f *lanePath) paddMixedOps(r, p *ext8, q *cached8) { f.paddOpsD(r, p, q, true) }

func (f *lanePath) paddOpsD(r, p *ext8, q *cached8, mixed bool) {
	var a, b, c, d, t fe8
	f.sub(&t, &p.Y, &p.X)
	f.mulW(&a, &t, &q.YmX)
	f.add(&t, &p.Y, &p.X)
	f.mulW(&b, &t, &q.YpX)
	f.mulW(&c, &p.T, &q.T2d)
	if mixed {
		d = p.Z
	} else {
		f.mulW(&d, &p.Z, &q.Z2)
	}
	var e, ff, g, h fe8
	f.subW(&e, &b, &a)
	f.subW(&ff, &d, &c)
	f.add(&g, &d, &c)
	f.add(&h, &b, &a)
	f.mul(&r.X, &e, &ff)
	f.mul(&r.Y, &g, &h)
	f.mul(&r.T, &e, &h)
	f.mul(&r.Z, &ff, &g)
}

// paddBase is padd for a q whose Z2 is 1, as pickBase's are: on ifma8
// one call of paddMixedOps, a multiply fewer; the others padd (avx2x4's
// ladder has its own, padd25MixedAVX2).
func (f *lanePath) paddBase(r, p *ext8, q *cached8) {
	if f.kind == pathIFMA {
		paddMixedIFMA(r, p, q)
		return
	}
	f.padd(r, p, q)
}

// paddBaseXYZ is paddBase where T of the result is not read, as paddXYZ.
func (f *lanePath) paddBaseXYZ(r, p *ext8, q *cached8) {
	if f.kind == pathIFMA {
		paddMixedXYZIFMA(r, p, q)
		return
	}
	f.paddXYZ(r, p, q)
}

// dbl sets r = 2p (3S + 4M, and a fifth M for T if withT); r may alias
// p. The formula reads X, Y, Z only, so T may be left stale when the next
// operation is another doubling. The ifma8 path does it in one assembly
// call, the same operations as dblOps; avx2x4's ladder doubles in radix
// 2^25.5 instead (ladder25, dbl25AVX2), so here it calls its field
// operations.
func (f *lanePath) dbl(r, p *ext8, withT bool) {
	switch {
	case f.kind == pathIFMA && withT:
		dblIFMA(r, p)
	case f.kind == pathIFMA:
		dblXYZIFMA(r, p)
	default:
		f.dblOps(r, p, withT)
	}
}

// dblOps is dbl by calls to the path's field operations. E = 2XY by one
// doubled multiply rather than (X+Y)^2 - X^2 - Y^2, and 2Z^2 by a doubled
// square: an add and two subtractions fewer, a multiply for a square.
// XX, YY and 2ZZ only feed sums and differences, so they are wide.
func (f *lanePath) dblOps(r, p *ext8, withT bool) {
	var xx, yy, zz2, e, g, h, ff fe8
	f.sqrW(&xx, &p.X)
	f.sqrW(&yy, &p.Y)
	f.sqr2W(&zz2, &p.Z)
	f.mul2(&e, &p.X, &p.Y) // 2XY
	f.add(&h, &yy, &xx)    // YY + XX
	f.subW(&g, &yy, &xx)   // YY - XX
	f.sub(&ff, &zz2, &g)   // 2Z^2 - (YY - XX)
	f.mul(&r.X, &e, &ff)
	f.mul(&r.Y, &h, &g)
	f.mul(&r.Z, &g, &ff)
	if withT {
		f.mul(&r.T, &e, &h)
	}
}

// mulW sets z = a * b for add, sub (as a) or subW to read, and nothing
// else: wide (mulWideGeneric) on ifma8, whose one-call dbl and padd do
// the same, and on portable; loose on avx2x4, whose multiply has no wide
// form.
func (f *lanePath) mulW(z, a, b *fe8) {
	switch f.kind {
	case pathIFMA:
		mulWideIFMA(z, a, b)
	case pathAVX2:
		f.mul(z, a, b)
	default:
		mulWideGeneric(z, a, b)
	}
}

// mul2W sets z = 2 a b as mulW does.
func (f *lanePath) mul2W(z, a, b *fe8) {
	switch f.kind {
	case pathIFMA:
		mul2WideIFMA(z, a, b)
	case pathAVX2:
		f.mul2(z, a, b)
	default:
		mul2WideGeneric(z, a, b)
	}
}

// sqrW sets z = a * a as mulW does: on avx2x4 its square, which is
// cheaper than its multiply (avx2x4 builds its tables with dblOps).
func (f *lanePath) sqrW(z, a *fe8) {
	if f.kind == pathAVX2 {
		f.sqr(z, a)
		return
	}
	f.mulW(z, a, a)
}

// sqr2W sets z = 2 a a as mul2W does, on avx2x4 by its sqr2.
func (f *lanePath) sqr2W(z, a *fe8) {
	if f.kind == pathAVX2 {
		f.sqr2(z, a)
		return
	}
	f.mul2W(z, a, a)
}

// subW sets z = a - b, where a and b may come from mulW: subWideGeneric,
// or on avx2x4 (loose inputs) sub.
func (f *lanePath) subW(z, a, b *fe8) {
	switch f.kind {
	case pathIFMA:
		subWideIFMA(z, a, b)
	case pathAVX2:
		f.sub(z, a, b)
	default:
		subWideGeneric(z, a, b)
	}
}

// sqrN sets z = a^(2^n), n >= 1. The ifma8 and avx2x4 paths do it in
// one assembly call.
func (f *lanePath) sqrN(z, a *fe8, n int) {
	if f.kind == pathAVX2 && n >= 1 { // the assembly's loop needs n >= 1
		sqrNAVX2(z, a, n)
		return
	}
	if f.kind == pathIFMA && n >= 1 {
		*z = *a
		sqrNIFMA(z, n)
		return
	}
	f.sqr(z, a)
	for i := 1; i < n; i++ {
		f.sqr(z, z)
	}
}
