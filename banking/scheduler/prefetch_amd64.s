//go:build amd64 && !purego

#include "textflag.h"

// func prefetch128(p unsafe.Pointer)
TEXT ·prefetch128(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 127(AX)
	RET
