//go:build !linux

package bankingtrace

import (
	"io"
	"os"
)

// newMapSource reads f whole: the portable stand-in for a mapping.
func newMapSource(f *os.File) (source, error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	return &sliceSource{data: data, unmap: f.Close}, nil
}
