package trace

// SetFileQueueSize makes the trace file's queue hold n spans in the
// Providers Setup builds until restore is called.
func SetFileQueueSize(n int) (restore func()) {
	old := fileQueueSize
	fileQueueSize = n
	return func() { fileQueueSize = old }
}
