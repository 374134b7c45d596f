package sigverify

// verifyHalves checks up to eight signatures in each of the first n (1 or
// 2) scratch states: each pass's own steps, but the exponent chains of
// decompression two at a time (pair), which hides much of a square's
// latency: A and R of one pass, or the As and then the Rs of two.
func verifyHalves(f *lanePath, s [2]*laneScratch, checks [2][]sigCheck, n int) {
	var p [4]*ext8
	var enc [4]*[lanes][32]byte
	var ok [4]*[lanes]bool
	for k := 0; k < n; k++ {
		s[k].prepareHalves(f, checks[k])
		p[k], enc[k], ok[k] = &s[k].a, &s[k].aEnc, &s[k].aOK
		p[n+k], enc[n+k], ok[n+k] = &s[k].r, &s[k].rPt, &s[k].rOK
	}
	decompressChains(f, &p, &enc, &ok, 2*n)
	ladderPasses(f, s, checks, n)
}

// decompressChains decompresses the first c of the points p from enc
// (setting ok), their exponent chains two at a time (pair); an odd last
// one goes alone.
func decompressChains(f *lanePath, p *[4]*ext8, enc *[4]*[lanes][32]byte, ok *[4]*[lanes]bool, c int) {
	for i := 0; i < c; i += 2 {
		pair{f, min(2, c-i)}.decompress([2]*ext8{p[i], p[i+1]},
			[2]*[lanes][32]byte{enc[i], enc[i+1]}, [2]*[lanes]bool{ok[i], ok[i+1]})
	}
}

// ladderPasses builds each of the first n passes' tables of -A and -R
// (A and R decompressed, Z = 1), walks its ladder and sets its checks'
// verdicts.
func ladderPasses(f *lanePath, s [2]*laneScratch, checks [2][]sigCheck, n int) {
	for k := 0; k < n; k++ {
		table(f, &s[k].negA, &s[k].negL, &s[k].a)
		table(f, &s[k].negR, &s[k].negRL, &s[k].r)
		s[k].ladderHalves(f)
		s[k].finishHalves(f, checks[k])
	}
}

// prepareHalves does the byte checks of up to eight signatures, one per lane,
// hashes, splits k (splitK) and writes c, d and e = d S mod L as
// digits; a lane without a check, or that fails, gets B as A and R and
// zero digits. A lane whose k does not split is marked for voi.
func (s *laneScratch) prepareHalves(f *lanePath, checks []sigCheck) {
	s.n = 32
	s.hashAll(f, checks)
	clear(s.kd[:halfDigits])
	clear(s.dd[:])
	clear(s.sd[:])
	for j := 0; j < lanes; j++ {
		s.pre[j], s.voi[j] = false, false
		s.aEnc[j], s.rPt[j] = baseEnc, baseEnc
		if j >= len(checks) {
			continue
		}
		c := &checks[j]
		kb := s.kb[j]
		if !s.kOK[j] {
			continue
		}
		var cb, db [32]byte
		cNeg, ok := splitK(&kb, &cb, &db)
		if !ok {
			s.voi[j] = true
			continue
		}
		// e = d S mod L: d < 2^splitBits and S < L (canonicalS), so
		// the product fits the 512 bits reduceWide takes.
		eb := mulModL(&db, (*[32]byte)(c.sig[32:]))
		s.pre[j] = true
		s.aEnc[j], s.rPt[j] = *c.pub, *(*[32]byte)(c.sig[:32])
		var cd, dd [halfDigits]int8
		var ed [32]int8
		radixHalf(&cd, &cb)
		radixHalf(&dd, &db)
		radix256(&ed, &eb)
		// The ladder walks to the highest digit any lane has; the rows
		// were cleared above, so a lane writes up to its own.
		top := halfDigits
		for top > 0 && cd[top-1]|dd[top-1] == 0 {
			top--
		}
		s.n = max(s.n, top)
		var neg int8 // -1 negates c's digits
		if cNeg {
			neg = -1
		}
		for i := 0; i < top; i++ {
			s.kd[i][j], s.dd[i][j] = (cd[i]^neg)-neg, dd[i]
		}
		for i, v := range ed {
			s.sd[i][j] = v
		}
	}
}

// ladderHalves sets s.q to [c](-A) + [d](-R) + [e]B, X, Y and Z (T is left
// stale): s.n radix-16 steps of four shared doublings, each adding c's
// and d's digits; every other step of the last 32 adds e's digits, the
// low 16 from baseTable, the high 16 from baseTable128.
func (s *laneScratch) ladderHalves(f *lanePath) {
	q := &s.q // set from the first pick (fromCached), not from the identity
	if f.kind == pathAVX2 {
		s.ladderHalves25(f)
		return
	}
	for i := s.n - 1; i >= 0; i-- {
		f.pick(&s.c, &s.negA, &s.negL, &s.kd[i])
		if i == s.n-1 {
			// q is the identity: the pick itself, no addition.
			f.fromCached(q, &s.c)
		} else {
			f.dbl(q, q, false)
			f.dbl(q, q, false)
			f.dbl(q, q, false)
			f.dbl(q, q, true)
			f.padd(q, q, &s.c)
		}
		// An addition that a doubling or the end follows
		// leaves T out: they read X, Y, Z only.
		f.pick(&s.c, &s.negR, &s.negRL, &s.dd[i])
		if i%2 == 1 || i > 30 {
			f.paddXYZ(q, q, &s.c)
			continue
		}
		f.padd(q, q, &s.c)
		f.pickBase(&s.c, &baseTable, &s.sd[i/2])
		f.paddBase(q, q, &s.c)
		f.pickBase(&s.c, &baseTable128, &s.sd[16+i/2])
		f.paddBaseXYZ(q, q, &s.c)
	}
}

// finishHalves sets each check's verdict: s.q is the identity (X = 0, Y = Z)
// where the signature holds; a lane whose k did not split is checked by
// voi.
func (s *laneScratch) finishHalves(f *lanePath, checks []sigCheck) {
	q := &s.q
	var x, y, z fe8 // canonical
	f.canonicalAll(&x, &q.X)
	f.canonicalAll(&y, &q.Y)
	f.canonicalAll(&z, &q.Z)
	for j := range checks {
		if s.voi[j] {
			c := &checks[j]
			c.ok = voiBackend{}.Verify(c.pub, c.msg, c.sig)
			continue
		}
		checks[j].ok = s.pre[j] && s.aOK[j] && s.rOK[j] &&
			x[0][j]|x[1][j]|x[2][j]|x[3][j]|x[4][j] == 0 && y.laneIs(&z, j)
	}
}

// ladderHalves25 is ladderHalves' loop on the avx2x4 path, the same steps with q
// kept in radix 2^25.5 (s.q25) from start to end, so that each operation
// splits and joins only the added point. An addition that a doubling
// follows (or the end: finish reads X, Y, Z) leaves T out, as the
// doublings but the last of four do.
func (s *laneScratch) ladderHalves25(f *lanePath) {
	q := &s.q25
	// The first pick itself, as ladderHalves starts.
	pickAVX2(&s.c, &s.negA, &s.kd[s.n-1])
	f.fromCached(&s.q, &s.c)
	toExt25AVX2(q, &s.q)
	for i := s.n - 1; i >= 0; i-- {
		if i < s.n-1 {
			dblXYZ25AVX2(q)
			dblXYZ25AVX2(q)
			dblXYZ25AVX2(q)
			dbl25AVX2(q)
			pickAVX2(&s.c, &s.negA, &s.kd[i])
			padd25AVX2(q, &s.c)
		}
		pickAVX2(&s.c, &s.negR, &s.dd[i])
		if i%2 == 1 || i > 30 {
			paddXYZ25AVX2(q, &s.c)
			continue
		}
		padd25AVX2(q, &s.c)
		pickBase(&s.c, &baseTable, &s.sd[i/2])
		padd25MixedAVX2(q, &s.c)
		pickBase(&s.c, &baseTable128, &s.sd[16+i/2])
		paddXYZ25MixedAVX2(q, &s.c)
	}
	fromExt25AVX2(&s.q, q)
}
