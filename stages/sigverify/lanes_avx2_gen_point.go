//go:build ignore

// The second half of lanes_avx2_gen: the one-call point operations and
// their frame, built from the field helpers of lanes_avx2_gen.go.

package main

import "fmt"

// A one-call operation's frame: the two halves of slot s at (2 s + h)
// 320 for half h, then the scratch slot. An ext25 has the same layout:
// coordinate c, half h at (2 c + h) 320. Each field operation is done on
// half 0, then on half 1: the two calls are independent, so the CPU
// overlaps them (done one half after the other, a chain of squares waits
// on each square's carry chain). The caller keeps DI (output), SI and DX
// (inputs), BX (an ext25), CX and R11 (the scratch slot) across the
// helper calls.

// at returns the frame offset of half h of slot s.
func at(s, h int) int { return slot * (2*s + h) }

// ext is the first of the four slots numbers that stand for the
// coordinates X, Y, Z, T of an ext25, at BX, rather than frame slots.
const ext = 100

// addr returns the address of half h of slot s: in the frame at R13, or
// for s >= ext coordinate s - ext of the ext25 at BX.
func addr(s, h int) string {
	if s >= ext {
		return fmt.Sprintf("%d(BX)", at(s-ext, h))
	}
	return fmt.Sprintf("%d(R13)", at(s, h))
}

// call25 writes calls of helper with R8, R9, R10 at the slots a, b, dst
// (b < 0: none), for each half.
func call25(helper string, dst, a, b int) {
	for h := 0; h < 2; h++ {
		p("LEAQ %s, R8", addr(a, h))
		if b >= 0 {
			p("LEAQ %s, R9", addr(b, h))
		}
		p("LEAQ %s, R10", addr(dst, h))
		p("CALL ·%s<>(SB)", helper)
	}
}

// splitIn writes the split of the fe8 at off(reg) into slot s.
func splitIn(s int, reg string, off int) {
	for h := 0; h < 2; h++ {
		p("LEAQ %d(%s), R12", off+32*h, reg)
		p("LEAQ %s, R10", addr(s, h))
		p("CALL ·split25<>(SB)")
	}
}

// joinOut writes the join of slot s into the fe8 at off(DI).
func joinOut(s int, off int) {
	for h := 0; h < 2; h++ {
		p("LEAQ %s, R8", addr(s, h))
		p("LEAQ %d(DI), R12", off+32*h)
		p("CALL ·join25<>(SB)")
	}
}

// prologue loads the arguments (names, 8 bytes each, into regs; one
// into BX is an ext25, rounded up to 32 bytes) and points R11 at the
// scratch slot after frame slots 0..n-1.
func prologue(name, args string, n int, names, regs []string) {
	fmt.Fprintf(&out, "// func %s(%s)\n", name, args)
	fmt.Fprintf(&out, "TEXT ·%s(SB), 0, $%d-%d\n", name, at(n, 1)+32, 8*len(names))
	for i, r := range regs {
		p("MOVQ %s+%d(FP), %s", names[i], 8*i, r)
		if r == "BX" {
			p("ADDQ $31, BX")
			p("ANDQ $~31, BX")
		}
	}
	// R13: the frame rounded up to 32 bytes, so that no slot's limb
	// straddles a cache line.
	p("LEAQ 31(SP), R13")
	p("ANDQ $~31, R13")
	p("LEAQ %d(R13), R11", at(n, 0))
}

func epilogue() {
	p("VZEROUPPER")
	p("RET")
	out.WriteString("\n")
}

// Offsets of an ext8's and a cached8's coordinates.
const (
	fe8Size = 320
	coordX  = 0 * fe8Size // X, or Y+X
	coordY  = 1 * fe8Size // Y, or Y-X
	coordZ  = 2 * fe8Size // Z, or 2Z
	coordT  = 3 * fe8Size // T, or 2dT
)

// genDbl writes dbl25AVX2(p *ext25) or, without T, dblXYZ25AVX2:
// dblOps's formula, in radix 2^25.5, on an ext25 in place: the inputs are
// its slots, no split, and the last multiplies write its slots, no join
// (each after the last read of the coordinate it replaces). (An ext8
// doubling is not written: the ladder, ladder25, doubles only ext25s.)
func genDbl(withT bool) {
	name := "dblXYZ25AVX2"
	if withT {
		name = "dbl25AVX2"
	}
	x, yy0, z := ext+0, ext+1, ext+2
	const xx, yy, zz2, s, h, g, e, ff = 3, 4, 5, 6, 7, 8, 9, 10
	rx, ry, rz, rt := ext+0, ext+1, ext+2, ext+3
	prologue(name, "p *ext25", 15, []string{"p"}, []string{"BX"})
	call25("sqr25", xx, x, -1)
	call25("sqr25", yy, yy0, -1)
	call25("sqr25", zz2, z, -1)
	// Sums (add25, no carry) go only into mul25, sqr25 or sub25's first
	// operand, except h, a sum of two squares, fit for sub25's second.
	call25("add25", zz2, zz2, zz2)
	call25("add25", s, x, yy0)
	call25("sqr25", s, s, -1)
	call25("add25", h, yy, xx)  // YY + XX
	call25("sub25", g, yy, xx)  // YY - XX
	call25("sub25", e, s, h)    // 2XY
	call25("sub25", ff, zz2, g) // 2Z^2 - (YY - XX)
	call25("mul25", rx, e, ff)
	call25("mul25", ry, h, g)
	call25("mul25", rz, g, ff)
	if withT {
		call25("mul25", rt, e, h)
	}
	epilogue()
}

// genPadd writes paddAVX2(r, p *ext8, q *cached8): paddOps's formula, in
// radix 2^25.5. With in25 it writes padd25AVX2(p *ext25, q *cached8), the
// same on an ext25 in place, as genDbl, or without T paddXYZ25AVX2 (its
// last multiply, T = E H, left out); with in25 and mixed,
// padd25MixedAVX2 and paddXYZ25MixedAVX2, for a q whose Z2 is 1 (a base
// table's entry): D is p's Z, as paddMixedOps, where Z Z2 took a
// multiply.
func genPadd(in25, withT, mixed bool) {
	px, py, pz, pt := 0, 1, 2, 3
	const (
		ypx, ymx, z2, t2d       = 4, 5, 6, 7
		t, a, b, c, e, ff, g, h = 8, 9, 10, 11, 13, 14, 15, 16
	)
	d := 12
	rx, ry, rz, rt := 17, 18, 19, 20
	if in25 {
		px, py, pz, pt = ext+0, ext+1, ext+2, ext+3
		rx, ry, rz, rt = ext+0, ext+1, ext+2, ext+3
		name := "padd25AVX2"
		if !withT {
			name = "paddXYZ25AVX2"
		}
		if mixed {
			name = name[:len(name)-4] + "MixedAVX2"
		}
		prologue(name, "p *ext25, q *cached8", 21, []string{"p", "q"}, []string{"BX", "DX"})
	} else {
		prologue("paddAVX2", "r, p *ext8, q *cached8", 21, []string{"r", "p", "q"}, []string{"DI", "SI", "DX"})
		splitIn(px, "SI", coordX)
		splitIn(py, "SI", coordY)
		splitIn(pz, "SI", coordZ)
		splitIn(pt, "SI", coordT)
	}
	splitIn(ypx, "DX", coordX)
	splitIn(ymx, "DX", coordY)
	if !mixed {
		splitIn(z2, "DX", coordZ)
	}
	splitIn(t2d, "DX", coordT)
	// Sums (add25, no carry) go only into mul25.
	call25("sub25", t, py, px)
	call25("mul25", a, t, ymx)
	call25("add25", t, py, px)
	call25("mul25", b, t, ypx)
	call25("mul25", c, pt, t2d)
	if mixed {
		d = pz // read before the outputs, which may be p's slots, are written
	} else {
		call25("mul25", d, pz, z2)
	}
	call25("sub25", e, b, a)
	call25("sub25", ff, d, c)
	call25("add25", g, d, c)
	call25("add25", h, b, a)
	call25("mul25", rx, e, ff)
	call25("mul25", ry, g, h)
	if withT {
		call25("mul25", rt, e, h)
	}
	call25("mul25", rz, ff, g)
	if !in25 {
		joinOut(rx, coordX)
		joinOut(ry, coordY)
		joinOut(rz, coordZ)
		joinOut(rt, coordT)
	}
	epilogue()
}

// genConv writes toExt25AVX2(r *ext25, p *ext8) (four splits) and
// fromExt25AVX2(r *ext8, p *ext25) (four joins).
func genConv() {
	prologue("toExt25AVX2", "r *ext25, p *ext8", 0, []string{"r", "p"}, []string{"BX", "SI"})
	for c := 0; c < 4; c++ {
		splitIn(ext+c, "SI", c*fe8Size)
	}
	epilogue()
	prologue("fromExt25AVX2", "r *ext8, p *ext25", 0, []string{"r", "p"}, []string{"DI", "BX"})
	for c := 0; c < 4; c++ {
		joinOut(ext+c, c*fe8Size)
	}
	epilogue()
}

// genSqrN writes sqrNAVX2(z, a *fe8, n int): a split once, squared n
// times in radix 2^25.5 (n >= 1), joined once.
func genSqrN() {
	prologue("sqrNAVX2", "z, a *fe8, n int", 1, []string{"z", "a", "n"}, []string{"DI", "SI", "CX"})
	splitIn(0, "SI", 0)
	out.WriteString("sqr:\n")
	call25("sqr25", 0, 0, -1)
	p("DECQ CX")
	p("JNZ sqr")
	joinOut(0, 0)
	epilogue()
}
