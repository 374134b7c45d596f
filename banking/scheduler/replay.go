package scheduler

// InFlight returns the number of work batches handed to workers and not
// yet passed to Complete. A caller that wants completions booked in an
// order of its own (a deterministic replay) collects exactly this many
// before completing any.
func (s *Scheduler) InFlight() int { return s.workers.outstanding }
