//go:build ignore

// The lane-wise part of lanes_avx2_gen: the reduction of all lanes mod p,
// and the picks from a table8 by gathers.

package main

// genCanonical writes canonicalAVX2(z, a *fe8): every lane of a reduced
// mod p, step for step as fe8.canonical does one lane (carry pass, q = 1
// where the value is p or more, 19 q added, a serial carry dropping
// 2^255), four lanes a half.
func genCanonical() {
	out.WriteString("// func canonicalAVX2(z, a *fe8)\nTEXT ·canonicalAVX2(SB), NOSPLIT, $0-16\n")
	p("MOVQ z+0(FP), DI")
	p("MOVQ a+8(FP), SI")
	ones("Y13", 13) // 2^51 - 1
	p("MOVQ $19, AX")
	p("MOVQ AX, X14")
	p("VPBROADCASTQ X14, Y14") // 19
	for h := 0; h < 2; h++ {
		off := 32 * h
		for i := 0; i < 5; i++ {
			p("VMOVDQU %d(SI), %s", 64*i+off, y(i))
		}
		// The carry pass: c_i = r_i >> 51 into Y5..Y9, r_i &= m, 19 c_4
		// (below 2^13: VPMULUDQ's 32 bits) into r_0.
		for i := 0; i < 5; i++ {
			p("VPSRLQ $51, %s, %s", y(i), y(5+i))
			p("VPAND Y13, %s, %s", y(i), y(i))
		}
		p("VPMULUDQ Y14, Y9, Y9")
		p("VPADDQ Y9, Y0, Y0")
		for i := 1; i < 5; i++ {
			p("VPADDQ %s, %s, %s", y(5+i-1), y(i), y(i))
		}
		// q = floor((v + 19) / 2^255), then v + 19 q, carried serially,
		// bit 255 dropped.
		p("VPADDQ Y14, Y0, Y5")
		p("VPSRLQ $51, Y5, Y5")
		for i := 1; i < 5; i++ {
			p("VPADDQ Y5, %s, Y5", y(i))
			p("VPSRLQ $51, Y5, Y5")
		}
		p("VPMULUDQ Y14, Y5, Y5")
		p("VPADDQ Y5, Y0, Y0")
		for i := 0; i < 4; i++ {
			p("VPSRLQ $51, %s, Y6", y(i))
			p("VPADDQ Y6, %s, %s", y(i+1), y(i+1))
			p("VPAND Y13, %s, %s", y(i), y(i))
		}
		p("VPAND Y13, Y4, Y4")
		for i := 0; i < 5; i++ {
			p("VMOVDQU %s, %d(DI)", y(i), 64*i+off)
		}
	}
	p("VZEROUPPER")
	p("RET")
	out.WriteString("\n")
}

// genPick writes pickAVX2(c *cached8, t *table8, d *[8]int8): as
// table8.pick, by VPGATHERQQ, four lanes at a time. For lane j and digit
// v, a = |v|, each limb row of c takes lane j of entry a's row: Y+X from
// Y-X's and Y-X from Y+X's where v < 0, and 2dT from negT (which follows
// T2d in entry8 by one fe8, as Y-X follows Y+X). So a lane's byte
// offsets are a*1600 + 8j (Z2), that plus 320 if v < 0 (Y+X, and 2dT at
// 960 on from it), and plus 320 if not (Y-X); the coordinate's and
// limb's offsets are the gathers' displacements.
func genPick() {
	const entry, fe = 1600, 320 // sizes of entry8 and fe8
	out.WriteString("// func pickAVX2(c *cached8, t *table8, d *[8]int8)\nTEXT ·pickAVX2(SB), NOSPLIT, $0-24\n")
	p("MOVQ c+0(FP), DI")
	p("MOVQ t+8(FP), SI")
	p("MOVQ d+16(FP), DX")
	// Y15: the lanes' offsets in a limb row, 0, 8, 16, 24.
	p("MOVQ $8, AX")
	p("VMOVQ AX, X15")
	p("VPSLLDQ $8, X15, X15")
	p("MOVQ $16, AX")
	p("VMOVQ AX, X14")
	p("VPBROADCASTQ X14, X14")
	p("VPADDQ X14, X15, X14")
	p("VINSERTI128 $1, X14, Y15, Y15")
	p("MOVQ $%d, AX", entry)
	p("VMOVQ AX, X14")
	p("VPBROADCASTQ X14, Y14")
	p("MOVQ $%d, AX", fe)
	p("VMOVQ AX, X13")
	p("VPBROADCASTQ X13, Y13")
	p("VPXOR Y12, Y12, Y12")
	for h := 0; h < 2; h++ {
		p("VPMOVSXBQ %d(DX), Y0", 4*h) // v
		p("VPCMPGTQ Y0, Y12, Y2")      // m: -1 where v < 0
		p("VPXOR Y2, Y0, Y3")
		p("VPSUBQ Y2, Y3, Y3")    // a = |v|
		p("VPMULUDQ Y14, Y3, Y4") // a * 1600
		p("VPADDQ Y15, Y4, Y4")   // + 8j: Z2's index
		p("VPAND Y13, Y2, Y5")    // 320 where v < 0
		p("VPADDQ Y5, Y4, Y6")    // Y+X's (and 2dT's) index
		p("VPADDQ Y13, Y4, Y7")   //
		p("VPSUBQ Y5, Y7, Y7")    // Y-X's index
		for l := 0; l < 5; l++ {
			for k, g := range []struct {
				idx  string
				disp int
			}{{"Y6", 0}, {"Y7", 0}, {"Y4", 2 * fe}, {"Y6", 3 * fe}} {
				dst := []string{"Y8", "Y9", "Y10", "Y11"}[k]
				mask := []string{"Y0", "Y1", "Y2", "Y3"}[k]
				p("VPCMPEQQ %s, %s, %s", mask, mask, mask)
				p("VPGATHERQQ %s, %d(SI)(%s*1), %s", mask, g.disp+64*l+32*h, g.idx, dst)
				p("VMOVDQU %s, %d(DI)", dst, k*fe+64*l+32*h)
			}
		}
	}
	p("VZEROUPPER")
	p("RET")
	out.WriteString("\n")
}
