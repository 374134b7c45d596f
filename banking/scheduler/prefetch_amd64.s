//go:build amd64 && !purego

#include "textflag.h"

// func prefetch128(p unsafe.Pointer)
TEXT ·prefetch128(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 127(AX)
	RET

// func prefetch448(p unsafe.Pointer)
TEXT ·prefetch448(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT0 320(AX)
	PREFETCHT0 384(AX)
	RET

// func prefetch64(p unsafe.Pointer)
TEXT ·prefetch64(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	RET
