package bankingtrace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// ReadConfig configures a Reader.
type ReadConfig struct {
	// Mmap maps each file into memory (on Linux; elsewhere the file is
	// read whole) and decodes records in place, instead of reading the
	// file through a buffer.
	Mmap bool
	// BufSize is the buffer of buffered reads, in bytes. Zero means
	// 64 KiB.
	BufSize int
}

// Reader reads a trace directory's records in order, file after file.
// It belongs to one goroutine.
type Reader struct {
	dir    string
	cfg    ReadConfig
	names  []string
	idx    int // the open file's index in names
	src    source
	header Header // the first file's
	rec    Record
	torn   string // "file at offset N" where the newest file was cut short
}

// Open opens the trace in dir with buffered reads and reads its first
// header.
func Open(dir string) (*Reader, error) { return OpenConfig(dir, ReadConfig{}) }

// OpenConfig opens the trace in dir and reads its first header.
func OpenConfig(dir string, cfg ReadConfig) (*Reader, error) {
	if cfg.BufSize <= 0 {
		cfg.BufSize = 64 << 10
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("bankingtrace: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrNoTrace, dir)
	}
	names, err := traceFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: %s holds no trace file (trace-NNNNNNNNNN.btr)", ErrNoTrace, dir)
	}
	r := &Reader{dir: dir, cfg: cfg, names: names, idx: -1}
	if err := r.openNext(); err != nil {
		return nil, err
	}
	return r, nil
}

// Header returns the first file's header.
func (r *Reader) Header() Header { return r.header }

// Files returns the trace's file names, oldest first.
func (r *Reader) Files() []string { return r.names }

// Torn reports where the newest file was cut short, once Next has
// stopped there: "FILE at offset N". Empty when it was not.
func (r *Reader) Torn() string { return r.torn }

// Next returns the next batch, slot or gap record (headers are checked
// and skipped), or io.EOF at the end of the trace, or at a torn tail of
// the newest file (see Torn). The record is valid until the next call.
func (r *Reader) Next() (*Record, error) {
	for {
		if r.src == nil {
			return nil, io.EOF
		}
		rec, off, err := r.src.next()
		switch {
		case err == nil:
			if err := r.rec.decode(rec); err != nil {
				return nil, r.corrupt(off, err)
			}
			return &r.rec, nil
		case err == io.EOF:
			if err := r.openNext(); err != nil {
				return nil, err
			}
		case errors.Is(err, errTorn) && r.idx == len(r.names)-1:
			r.torn = fmt.Sprintf("%s at offset %d", r.path(), off)
			r.src.close()
			r.src = nil
			return nil, io.EOF
		default:
			return nil, r.corrupt(off, err)
		}
	}
}

// Close closes the open file.
func (r *Reader) Close() error {
	if r.src == nil {
		return nil
	}
	err := r.src.close()
	r.src = nil
	return err
}

func (r *Reader) path() string { return filepath.Join(r.dir, r.names[r.idx]) }

func (r *Reader) corrupt(off int64, err error) error {
	if errors.Is(err, errTorn) {
		err = errors.New("record cut short, and a newer file follows")
	}
	return fmt.Errorf("%w: %s at offset %d: %v", ErrCorrupt, r.path(), off, err)
}

// openNext closes the open file, if any, and opens the next one, checking
// its magic, version and header; with no file left it leaves src nil.
func (r *Reader) openNext() error {
	if r.src != nil {
		r.src.close()
		r.src = nil
	}
	r.idx++
	if r.idx == len(r.names) {
		return nil
	}
	f, err := os.Open(r.path())
	if err != nil {
		return fmt.Errorf("bankingtrace: %w", err)
	}
	var src source
	if r.cfg.Mmap {
		src, err = newMapSource(f)
	} else {
		src = &streamSource{f: f, br: bufio.NewReaderSize(f, r.cfg.BufSize)}
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("bankingtrace: %s: %w", r.path(), err)
	}
	r.src = src
	start, err := src.start()
	switch {
	case errors.Is(err, errTorn) || errors.Is(err, io.EOF):
		if r.idx == len(r.names)-1 && r.idx > 0 {
			r.torn = fmt.Sprintf("%s at offset 0", r.path())
			src.close()
			r.src = nil
			return nil
		}
		return r.corrupt(0, errors.New("shorter than a file header"))
	case err != nil:
		return fmt.Errorf("bankingtrace: %s: %w", r.path(), err)
	case string(start[:len(magic)]) != magic:
		return r.corrupt(0, errors.New("not a banking trace file (bad magic)"))
	}
	if v := binary.LittleEndian.Uint32(start[len(magic):]); v != Version {
		if v < Version {
			return fmt.Errorf("%w: %s: format version %d, written by an older tpu; this tpu reads version %d only (its traces record when banking took each batch): record the traffic again", ErrVersion, r.path(), v, Version)
		}
		return fmt.Errorf("%w: %s: format version %d, written by a newer tpu; this tpu reads version %d only", ErrVersion, r.path(), v, Version)
	}
	rec, off, err := src.next()
	if err != nil {
		if (errors.Is(err, errTorn) || err == io.EOF) && r.idx == len(r.names)-1 && r.idx > 0 {
			r.torn = fmt.Sprintf("%s at offset %d", r.path(), off)
			src.close()
			r.src = nil
			return nil
		}
		if err == io.EOF {
			err = errors.New("no header")
		}
		return r.corrupt(off, err)
	}
	if Kind(rec[0]) != KindHeader {
		return r.corrupt(off, fmt.Errorf("first record is a %s, not a header", Kind(rec[0])))
	}
	h, err := decodeHeader(rec[1:])
	if err != nil {
		return r.corrupt(off, err)
	}
	if r.idx == 0 {
		r.header = h
	} else if !h.sameBank(r.header) {
		return r.corrupt(off, errors.New("header describes another bank than the first file's"))
	}
	return nil
}

var errTorn = errors.New("record cut short")

// source reads one file's records.
type source interface {
	// start returns the magic and version.
	start() ([]byte, error)
	// next returns the next record's kind and payload, valid until the
	// next call, and its offset; io.EOF at a clean end, errTorn when the
	// file ends inside the record.
	next() (rec []byte, off int64, err error)
	close() error
}

// check verifies a record's frame: its length is in range and its
// checksum matches body (nil: not yet read).
func checkLength(n uint32) error {
	if n == 0 || n > maxRecord {
		return fmt.Errorf("record length %d out of range", n)
	}
	return nil
}

func checkSum(frame, body []byte) error {
	if want, got := binary.LittleEndian.Uint32(frame[4:]), crc32.Checksum(body, castagnoli); want != got {
		return fmt.Errorf("checksum %08x, record says %08x", got, want)
	}
	return nil
}

// streamSource reads a file through a bufio.Reader.
type streamSource struct {
	f     *os.File
	br    *bufio.Reader
	off   int64
	frame [frameSize]byte
	buf   []byte
}

func (s *streamSource) start() ([]byte, error) {
	b := make([]byte, fileHeaderSize)
	n, err := io.ReadFull(s.br, b)
	s.off += int64(n)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return nil, errTorn
	}
	return b, err
}

func (s *streamSource) next() ([]byte, int64, error) {
	off := s.off
	n, err := io.ReadFull(s.br, s.frame[:])
	s.off += int64(n)
	switch {
	case err == io.EOF:
		return nil, off, io.EOF
	case err == io.ErrUnexpectedEOF:
		return nil, off, errTorn
	case err != nil:
		return nil, off, err
	}
	size := binary.LittleEndian.Uint32(s.frame[:])
	if err := checkLength(size); err != nil {
		return nil, off, err
	}
	if cap(s.buf) < int(size) {
		s.buf = make([]byte, size, max(int(size), 2*cap(s.buf)))
	}
	body := s.buf[:size]
	n, err = io.ReadFull(s.br, body)
	s.off += int64(n)
	switch {
	case err == io.EOF, err == io.ErrUnexpectedEOF:
		return nil, off, errTorn
	case err != nil:
		return nil, off, err
	}
	if err := checkSum(s.frame[:], body); err != nil {
		return nil, off, err
	}
	return body, off, nil
}

func (s *streamSource) close() error { return s.f.Close() }

// sliceSource decodes a file held in memory (mapped, or read whole).
type sliceSource struct {
	data  []byte
	off   int
	unmap func() error
}

func (s *sliceSource) start() ([]byte, error) {
	if len(s.data) < fileHeaderSize {
		return nil, errTorn
	}
	s.off = fileHeaderSize
	return s.data[:fileHeaderSize], nil
}

func (s *sliceSource) next() ([]byte, int64, error) {
	off := s.off
	rest := s.data[off:]
	switch {
	case len(rest) == 0:
		return nil, int64(off), io.EOF
	case len(rest) < frameSize:
		return nil, int64(off), errTorn
	}
	size := binary.LittleEndian.Uint32(rest)
	if err := checkLength(size); err != nil {
		return nil, int64(off), err
	}
	if uint64(len(rest)-frameSize) < uint64(size) {
		return nil, int64(off), errTorn
	}
	body := rest[frameSize : frameSize+int(size)]
	if err := checkSum(rest, body); err != nil {
		return nil, int64(off), err
	}
	s.off += frameSize + int(size)
	return body, int64(off), nil
}

func (s *sliceSource) close() error { return s.unmap() }
