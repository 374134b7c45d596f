//go:build amd64 && !purego

package sigverify

import "golang.org/x/sys/cpu"

//go:generate go run lanes_ifma_gen.go

// hasIFMA reports whether this CPU (and OS) runs the ifma8 path: AVX-512
// F for the ZMM registers and IFMA for the 52-bit multiplies.
var hasIFMA = cpu.X86.HasAVX512F && cpu.X86.HasAVX512IFMA

// ifmaPath is the 8-lane AVX-512 IFMA path.
var ifmaPath = &lanePath{name: "ifma8", kind: pathIFMA}

// bestPath is the fastest lane path this CPU runs.
var bestPath = func() *lanePath {
	if hasIFMA {
		return ifmaPath
	}
	return portablePath
}()

// lanePaths are the lane paths this CPU runs, portable first.
func lanePaths() []*lanePath {
	if hasIFMA {
		return []*lanePath{portablePath, ifmaPath}
	}
	return []*lanePath{portablePath}
}

// mulIFMA sets z = a * b, as mulGeneric, bit for bit. Only where hasIFMA.
//
//go:noescape
func mulIFMA(z, a, b *fe8)

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
