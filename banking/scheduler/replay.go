package scheduler

// InFlight returns the number of work batches handed to workers and not
// yet passed to Complete. A caller that wants completions booked in an
// order of its own (a deterministic replay) collects exactly this many
// before completing any.
func (s *Scheduler) InFlight() int { return s.workers.outstanding }

// InFlightOn returns the number of work batches handed to worker w and
// not yet passed to Complete (0 for a worker it does not have): a replay
// that must book worker w's next batch checks there is one to wait for.
func (s *Scheduler) InFlightOn(w int) int {
	if w < 0 || w >= len(s.workers.w) {
		return 0
	}
	return s.workers.w[w].batches
}

// WithDefaults returns c with its zero fields set to what New uses.
func (c Config) WithDefaults() Config { return c.withDefaults() }
