package remote

import "testing"

// TestNoWorkerChecksHere forces NoWorker: TryStart takes a verifier's
// credit, and the verifier leaves before the dispatcher places the pass
// (the Leave is ahead of the pass in the dispatcher's mailbox). The
// documented behaviour: the pass is checked at the leader, once, with
// every packet's outcome right; counted NoWorker (and Local); its
// credit goes back, so none is left over the verifiers in service (none
// now); the verifier never sees it.
func TestNoWorkerChecksHere(t *testing.T) {
	if isolate(t) {
		return
	}
	s := startChild(t, "honest")
	x := startLeader(t, LeaderConfig{Verifiers: []string{s.addr}, Credits: 1})
	p := newPass(t, newPool(t), 2, 30, 0, 0)
	defer p.release()
	// The Leave usually reaches the dispatcher after TryStart has taken
	// the credit; when it does not (TryStart finds none), join again.
	for tries := 0; ; tries++ {
		if tries == 100 {
			t.Fatal("the verifier's Leave always took its credit before TryStart")
		}
		waitFor(t, "the verifier in service", func() bool { return x.Stats().Verifiers == 1 })
		x.Leave(s.addr)
		if x.TryStart(p.batches, traceCtx{}.sc(), func() { p.done.Add(1) }) {
			break
		}
		x.Join(s.addr)
	}
	x.Wait()
	p.check(t)
	st := x.Stats()
	if st.NoWorker != 1 || st.Sent != 1 || st.Local != 1 || st.Remote != 0 || st.Retries != 0 || st.Timeouts != 0 {
		t.Errorf("stats %+v: want the pass checked here once, counted NoWorker", st)
	}
	if st.Verifiers != 0 || st.Credits != 0 {
		t.Errorf("%d verifiers in service, %d credits free: want none of either", st.Verifiers, st.Credits)
	}
	if ss := s.stop(t); ss.Requests != 0 {
		t.Errorf("the verifier got %d requests, want none", ss.Requests)
	}
}
