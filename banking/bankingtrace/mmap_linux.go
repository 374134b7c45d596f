//go:build linux

package bankingtrace

import (
	"os"

	"golang.org/x/sys/unix"
)

// newMapSource maps f read-only; closing the source unmaps it and closes
// f.
func newMapSource(f *os.File) (source, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return &sliceSource{unmap: f.Close}, nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	_ = unix.Madvise(data, unix.MADV_SEQUENTIAL)
	return &sliceSource{data: data, unmap: func() error {
		err := unix.Munmap(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}}, nil
}
