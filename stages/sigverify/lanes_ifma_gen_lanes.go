//go:build ignore

// The lane-layout part of lanes_ifma_gen: the picks from tables by lane,
// the tables' transposes, and the reduction of all lanes mod p.

package main

import (
	"fmt"
	"strings"
)

// emitTranspose8 emits the transpose of the 8x8 block of words in
// registers r (r[i] word w) into out (out[w] word i): three stages of
// shuffles within 128-bit blocks, of 128-bit blocks, and of pairs of
// them. It overwrites r and t; out may be t.
func emitTranspose8(r, t, out [8]string) {
	// t[2i] block b = (r[2i] word 2b, r[2i+1] word 2b); t[2i+1] the
	// odd words.
	for i := 0; i < 4; i++ {
		p("VPUNPCKLQDQ %s, %s, %s", r[2*i+1], r[2*i], t[2*i])
		p("VPUNPCKHQDQ %s, %s, %s", r[2*i+1], r[2*i], t[2*i+1])
	}
	// With w the word's parity: r[4h+w] = rows 4h..4h+3, words w and
	// 4+w; r[4h+2+w] words 2+w and 6+w (blocks: rows 4h,4h+1 then
	// 4h+2,4h+3, each two words).
	for h := 0; h < 2; h++ {
		for w := 0; w < 2; w++ {
			a, b := t[4*h+w], t[4*h+2+w]
			p("VSHUFI64X2 $0x88, %s, %s, %s", b, a, r[4*h+w])
			p("VSHUFI64X2 $0xdd, %s, %s, %s", b, a, r[4*h+2+w])
		}
	}
	for c := 0; c < 8; c++ {
		w, q := c%2, c/2
		lo, hi := r[w+2*(q%2)], r[4+w+2*(q%2)]
		imm := 0x88
		if q >= 2 {
			imm = 0xdd
		}
		p("VSHUFI64X2 $%#x, %s, %s, %s", imm, hi, lo, out[c])
	}
}

// regs8 names 8 consecutive registers from Z(first).
func regs8(first int) (r [8]string) {
	for i := range r {
		r[i] = z(first + i)
	}
	return r
}

// genPick writes name(c *cached8, t *laneTable or *[129]laneEntry,
// d *[8]int8): lane j of c from the laneEntry form at entry |d[j]|,
// lane j, form (d[j] < 0): entries entry bytes apart, lanes lane bytes
// apart within an entry (entry 0: a base table, 320 bytes an entry,
// every lane alike). It
// loads each lane's 20 words (three loads) and transposes them into the
// 20 limb registers of c.
func genPick(name string, entry, lane int) {
	base := entry == 0
	tArg := "tl *laneTable"
	if base {
		entry, tArg = 320, "t *[129]laneEntry"
	}
	fmt.Fprintf(&out, "// func %s(c *cached8, %s, d *[8]int8)\n", name, tArg)
	fmt.Fprintf(&out, "TEXT ·%s(SB), NOSPLIT, $0-24\n", name)
	p("MOVQ c+0(FP), DI")
	p("MOVQ %s+8(FP), SI", tArg[:strings.IndexByte(tArg, ' ')])
	p("MOVQ d+16(FP), DX")
	p("MOVQ $0x0f, AX")
	p("KMOVW AX, K1")
	rows := [3][8]string{regs8(0), regs8(8), regs8(16)}
	for j := 0; j < 8; j++ {
		// AX = SI + |d| entry + (d < 0) 160 + j lane.
		emitEntryAddr(j, entry, "SI", true)
		if !base && j > 0 {
			p("ADDQ $%d, AX", j*lane)
		}
		p("VMOVDQU64 (AX), %s", rows[0][j])
		p("VMOVDQU64 64(AX), %s", rows[1][j])
		p("VMOVDQU64.Z 128(AX), K1, %s", rows[2][j])
	}
	t := regs8(24)
	for b := 0; b < 3; b++ {
		emitTranspose8(rows[b], t, t)
		n := 8
		if b == 2 {
			n = 4
		}
		for c := 0; c < n; c++ {
			p("VMOVDQU64 %s, %d(DI)", t[c], 64*(8*b+c))
		}
	}
	p("VZEROUPPER")
	p("RET")
	out.WriteString("\n")
}

// emitEntryAddr sets AX to the address of the entry that the digit at
// off(DX) picks: base + |d| entry, and + (d < 0) 160 if form (a
// laneEntry's negative form). It overwrites BX.
func emitEntryAddr(off, entry int, base string, form bool) {
	p("MOVBQSX %d(DX), AX", off)
	p("MOVQ AX, BX")
	p("SARQ $63, BX")
	p("XORQ BX, AX")
	p("SUBQ BX, AX")
	p("IMUL3Q $%d, AX, AX", entry)
	if form {
		p("ANDQ $160, BX")
		p("ADDQ BX, AX")
	}
	p("ADDQ %s, AX", base)
}

// genPickComb writes pickCombIFMA(c *cached8, t *[8]*[9]combEntry,
// d *[8]int8): lane j of c from lane j's own table, entry |d[j]| of
// t[j] (128 bytes: Y+X, Y-X, 2dT, a zero word), two loads a lane and two
// transposes; then, in the lanes whose digit is negative (a mask from
// the digits' signs), Y+X and Y-X swapped and 2dT replaced by 2p - 2dT;
// 2Z is 1 (the entries have Z = 1, halved).
func genPickComb() {
	out.WriteString("// func pickCombIFMA(c *cached8, t *[8]*[9]combEntry, d *[8]int8)\n")
	out.WriteString("TEXT ·pickCombIFMA(SB), NOSPLIT, $0-24\n")
	p("MOVQ c+0(FP), DI")
	p("MOVQ t+8(FP), SI")
	p("MOVQ d+16(FP), DX")
	lo, hi := regs8(0), regs8(8)
	for j := 0; j < 8; j++ {
		emitEntryAddr(j, 128, fmt.Sprintf("%d(SI)", 8*j), false)
		p("VMOVDQU64 (AX), %s", lo[j])
		p("VMOVDQU64 64(AX), %s", hi[j])
	}
	// Words 0..7 into Z16..Z23, 8..15 into Z0..Z7: Y+X is rows 0..4,
	// Y-X rows 5..9, 2dT rows 10..14.
	emitTranspose8(lo, regs8(16), regs8(16))
	emitTranspose8(hi, regs8(24), lo)
	row := func(w int) string {
		if w < 8 {
			return z(16 + w)
		}
		return z(w - 8)
	}
	// K2: the lanes whose digit is negative.
	p("VPMOVSXBQ (DX), Z8")
	p("VPXORQ Z9, Z9, Z9")
	p("VPCMPQ $1, Z9, Z8, K2")
	for l := 0; l < 5; l++ {
		ypx, ymx := row(l), row(5+l)
		// Intel order: dst{K2} = K2 ? second : first.
		p("VPBLENDMQ %s, %s, K2, Z10", ymx, ypx)
		p("VPBLENDMQ %s, %s, K2, Z11", ypx, ymx)
		p("VMOVDQU64 Z10, %d(DI)", 64*l)
		p("VMOVDQU64 Z11, %d(DI)", 320+64*l)
	}
	// 2p: limb 0 2 (2^51 - 19), the others 2 (2^51 - 1).
	mask51("Z12")
	p("VPSLLQ $1, Z12, Z12")
	p("MOVQ $36, AX")
	p("VPBROADCASTQ AX, Z13")
	p("VPSUBQ Z13, Z12, Z13")
	for l := 0; l < 5; l++ {
		t, two := row(10+l), "Z12"
		if l == 0 {
			two = "Z13"
		}
		p("VPSUBQ %s, %s, K2, %s", t, two, t)
		p("VMOVDQU64 %s, %d(DI)", t, 960+64*l)
	}
	// 2Z = 1: limb 0 1, the others 0.
	p("MOVQ $1, AX")
	p("VPBROADCASTQ AX, Z14")
	p("VPXORQ Z15, Z15, Z15")
	p("VMOVDQU64 Z14, 640(DI)")
	for l := 1; l < 5; l++ {
		p("VMOVDQU64 Z15, %d(DI)", 640+64*l)
	}
	p("VZEROUPPER")
	p("RET")
	out.WriteString("\n")
}

// genPrefetchComb writes prefetchCombIFMA(t *combPass, d *[lanes]int8):
// for each of the four tables m and lane j, a prefetch of the 128-byte
// entry of table t[m][j] that digit d[128m + j] picks (the digits of m
// 16 rows of 8 apart: kd[16m + i] from &kd[i]), as pickCombIFMA
// computes its address: its first and last byte's lines, the two lines
// of an entry on a 64-byte boundary (combTable's are).
func genPrefetchComb() {
	out.WriteString("// func prefetchCombIFMA(t *combPass, d *[8]int8)\n")
	out.WriteString("TEXT ·prefetchCombIFMA(SB), NOSPLIT, $0-16\n")
	p("MOVQ t+0(FP), SI")
	p("MOVQ d+8(FP), DX")
	for m := 0; m < 4; m++ {
		for j := 0; j < 8; j++ {
			emitEntryAddr(128*m+j, 128, fmt.Sprintf("%d(SI)", 64*m+8*j), false)
			p("PREFETCHT0 (AX)")
			p("PREFETCHT0 127(AX)")
		}
	}
	p("RET")
	out.WriteString("\n")
}

// genTableLanes writes tableLanesIFMA(tl *laneTable, t *table8): each
// entry8 of t (1600 bytes: Y+X, Y-X, 2Z, 2dT, -2dT) as the 8 lanes'
// laneEntry forms, by 8x8 transposes of its limb rows.
func genTableLanes() {
	out.WriteString("// func tableLanesIFMA(tl *laneTable, t *table8)\n")
	out.WriteString("TEXT ·tableLanesIFMA(SB), NOSPLIT, $0-16\n")
	p("MOVQ tl+0(FP), DI")
	p("MOVQ t+8(FP), SI")
	p("MOVQ $0x0f, AX")
	p("KMOVW AX, K1")
	p("MOVQ $9, CX")
	out.WriteString("tableLanesLoop:\n")
	// The rows of each form: fields in the order the form stores them.
	forms := [2][4]int{{0, 1, 2, 3}, {1, 0, 2, 4}}
	r, t := regs8(0), regs8(8)
	for f, fields := range forms {
		var src []int // byte offsets of the 20 limb rows
		for _, fl := range fields {
			for l := 0; l < 5; l++ {
				src = append(src, 320*fl+64*l)
			}
		}
		for b := 0; b < 3; b++ {
			n := 8
			if b == 2 {
				n = 4
			}
			for i := 0; i < n; i++ {
				p("VMOVDQU64 %d(SI), %s", src[8*b+i], r[i])
			}
			emitTranspose8(r, t, t)
			for j := 0; j < 8; j++ {
				dst := fmt.Sprintf("%d(DI)", 320*j+160*f+64*b)
				if n == 8 {
					p("VMOVDQU64 %s, %s", t[j], dst)
				} else {
					p("VMOVDQU64 %s, K1, %s", t[j], dst)
				}
			}
		}
	}
	p("ADDQ $1600, SI")
	p("ADDQ $2560, DI")
	p("DECQ CX")
	p("JNZ tableLanesLoop")
	p("VZEROUPPER")
	p("RET")
	out.WriteString("\n")
}

// genCanonical writes canonicalIFMA(z, a *fe8): every lane of a reduced
// mod p, step for step as fe8.canonical does one lane (carry pass, q = 1
// where the value is p or more, 19 q added, a serial carry dropping 2^255).
func genCanonical() {
	out.WriteString("// func canonicalIFMA(z, a *fe8)\nTEXT ·canonicalIFMA(SB), NOSPLIT, $0-16\n")
	p("MOVQ z+0(FP), DI")
	p("MOVQ a+8(FP), SI")
	emitConsts()
	r := [5]string{"Z0", "Z1", "Z2", "Z3", "Z4"}
	for i := range r {
		p("VMOVDQU64 %s, %s", mem{"SI", 0}.limb(i), r[i])
	}
	carry(r, cMask, c19, [5]string{"Z10", "Z11", "Z12", "Z13", "Z14"})
	p("VPADDQ %s, %s, Z5", c19, r[0])
	p("VPSRLQ $51, Z5, Z5")
	for i := 1; i < 5; i++ {
		p("VPADDQ Z5, %s, Z5", r[i])
		p("VPSRLQ $51, Z5, Z5")
	}
	p("VPMULLQ %s, Z5, Z5", c19)
	p("VPADDQ Z5, %s, %s", r[0], r[0])
	for i := 0; i < 4; i++ {
		p("VPSRLQ $51, %s, Z6", r[i])
		p("VPADDQ Z6, %s, %s", r[i+1], r[i+1])
		p("VPANDQ %s, %s, %s", cMask, r[i], r[i])
	}
	p("VPANDQ %s, %s, %s", cMask, r[4], r[4])
	for i := range r {
		p("VMOVDQU64 %s, %s", r[i], mem{"DI", 0}.limb(i))
	}
	p("VZEROUPPER")
	p("RET")
	out.WriteString("\n")
}
