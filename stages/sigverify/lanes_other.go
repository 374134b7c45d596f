//go:build !amd64 || purego

package sigverify

// hasIFMA is false: the ifma8 path is amd64 assembly.
const hasIFMA = false

// hasAVX2 is false: the avx2x4 path is amd64 assembly.
const hasAVX2 = false

// bestPath is the fastest lane path this CPU runs: here, portable Go.
var bestPath = portablePath

// lanePaths are the lane paths this CPU runs.
func lanePaths() []*lanePath { return []*lanePath{portablePath} }

func mulIFMA(z, a, b *fe8)      { panic("sigverify: no ifma8 path on this platform") }
func addIFMA(z, a, b *fe8)      { panic("sigverify: no ifma8 path on this platform") }
func canonicalIFMA(z, a *fe8)   { panic("sigverify: no ifma8 path on this platform") }
func subIFMA(z, a, b *fe8)      { panic("sigverify: no ifma8 path on this platform") }
func sqrIFMA(z, a *fe8)         { panic("sigverify: no ifma8 path on this platform") }
func mul2IFMA(z, a, b *fe8)     { panic("sigverify: no ifma8 path on this platform") }
func mulWideIFMA(z, a, b *fe8)  { panic("sigverify: no ifma8 path on this platform") }
func mul2WideIFMA(z, a, b *fe8) { panic("sigverify: no ifma8 path on this platform") }
func subWideIFMA(z, a, b *fe8)  { panic("sigverify: no ifma8 path on this platform") }
func paddMixedIFMA(r, p *ext8, q *cached8) {
	panic("sigverify: no ifma8 path on this platform")
}
func paddMixedXYZIFMA(r, p *ext8, q *cached8) {
	panic("sigverify: no ifma8 path on this platform")
}
func sqrNIFMA(z *fe8, n int)          { panic("sigverify: no ifma8 path on this platform") }
func sqrN2IFMA(z1, z2 *fe8, n int)    { panic("sigverify: no ifma8 path on this platform") }
func sqr2IFMA(z, a *fe8)              { panic("sigverify: no ifma8 path on this platform") }
func dblIFMA(r, p *ext8)              { panic("sigverify: no ifma8 path on this platform") }
func dblXYZIFMA(r, p *ext8)           { panic("sigverify: no ifma8 path on this platform") }
func paddIFMA(r, p *ext8, q *cached8) { panic("sigverify: no ifma8 path on this platform") }
func paddXYZIFMA(r, p *ext8, q *cached8) {
	panic("sigverify: no ifma8 path on this platform")
}
func pickIFMA(c *cached8, tl *laneTable, d *[lanes]int8) {
	panic("sigverify: no ifma8 path on this platform")
}
func tableLanesIFMA(tl *laneTable, t *table8) { panic("sigverify: no ifma8 path on this platform") }
func pickBaseIFMA(c *cached8, t *[129]laneEntry, d *[lanes]int8) {
	panic("sigverify: no ifma8 path on this platform")
}
func pickCombIFMA(c *cached8, t *[lanes]*[9]combEntry, d *[lanes]int8) {
	panic("sigverify: no ifma8 path on this platform")
}
func prefetchCombIFMA(t *combPass, d *[lanes]int8) {
	panic("sigverify: no ifma8 path on this platform")
}

// ifmaPath is nil: there is no ifma8 path here.
var ifmaPath *lanePath

func mulAVX2(z, a, b *fe8)    { panic("sigverify: no avx2x4 path on this platform") }
func addAVX2(z, a, b *fe8)    { panic("sigverify: no avx2x4 path on this platform") }
func canonicalAVX2(z, a *fe8) { panic("sigverify: no avx2x4 path on this platform") }
func pickAVX2(c *cached8, t *table8, d *[lanes]int8) {
	panic("sigverify: no avx2x4 path on this platform")
}
func subAVX2(z, a, b *fe8)            { panic("sigverify: no avx2x4 path on this platform") }
func sqrAVX2(z, a *fe8)               { panic("sigverify: no avx2x4 path on this platform") }
func paddAVX2(r, p *ext8, q *cached8) { panic("sigverify: no avx2x4 path on this platform") }
func sqrNAVX2(z, a *fe8, n int)       { panic("sigverify: no avx2x4 path on this platform") }
func dbl25AVX2(p *ext25)              { panic("sigverify: no avx2x4 path on this platform") }
func dblXYZ25AVX2(p *ext25)           { panic("sigverify: no avx2x4 path on this platform") }
func padd25AVX2(p *ext25, q *cached8) { panic("sigverify: no avx2x4 path on this platform") }
func paddXYZ25AVX2(p *ext25, q *cached8) {
	panic("sigverify: no avx2x4 path on this platform")
}
func toExt25AVX2(r *ext25, p *ext8)   { panic("sigverify: no avx2x4 path on this platform") }
func fromExt25AVX2(r *ext8, p *ext25) { panic("sigverify: no avx2x4 path on this platform") }
func padd25MixedAVX2(p *ext25, q *cached8) {
	panic("sigverify: no avx2x4 path on this platform")
}
func paddXYZ25MixedAVX2(p *ext25, q *cached8) {
	panic("sigverify: no avx2x4 path on this platform")
}

// avx2Path is nil: there is no avx2x4 path here.
var avx2Path *lanePath
