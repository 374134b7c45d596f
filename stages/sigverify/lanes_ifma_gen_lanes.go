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
// every lane alike; entry < 0: t is *[8]*[9]laneEntry, lane j's own
// table at t[j], a key's comb table). It
// loads each lane's 20 words (three loads) and transposes them into the
// 20 limb registers of c.
func genPick(name string, entry, lane int) {
	base := entry == 0
	comb := entry < 0 // per-lane tables: t is *[8]*[9]laneEntry
	tArg := "tl *laneTable"
	switch {
	case comb:
		entry, tArg = 320, "t *[8]*[9]laneEntry"
	case base:
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
		p("MOVBQSX %d(DX), AX", j)
		p("MOVQ AX, BX")
		p("SARQ $63, BX")
		p("XORQ BX, AX")
		p("SUBQ BX, AX")
		p("IMUL3Q $%d, AX, AX", entry)
		p("ANDQ $160, BX")
		p("ADDQ BX, AX")
		if comb {
			p("ADDQ %d(SI), AX", 8*j)
		} else {
			p("ADDQ SI, AX")
		}
		if !base && !comb && j > 0 {
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
