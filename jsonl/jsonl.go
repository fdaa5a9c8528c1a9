// Package jsonl decodes files of JSON lines (history.jsonl, store.log) on
// every core. A long run's history is 10⁶ lines; decoding them one at a
// time with encoding/json took most of a check. The lines are cut into
// blocks that workers decode with github.com/goccy/go-json straight into
// their place in one slice, sized by a first pass that counts the lines,
// so nothing is decoded twice or copied. What a line means, and what the
// lines before it allow, is left to the caller, which walks the lines in
// order afterwards.
//
// A history repeats a handful of words (process names, types, operations)
// a million times. A caller that says how to own its strings (see Own) has
// them decoded without a copy each and then shared: one string per word
// and worker instead of one per line, which spares most of the decoding's
// allocations and the collector's work on them.
//
// Lines are read as bufio.ScanLines reads them: split at '\n', one trailing
// '\r' dropped, the last line counted whether or not a '\n' ends it.
package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"

	json "github.com/goccy/go-json"
)

// ErrEmpty marks an empty line, which holds no value.
var ErrEmpty = errors.New("empty line")

// errSkipped marks a non-empty line after a line that did not decode in
// the same block: it is not decoded, since no caller can accept a bad line
// that is not the last.
var errSkipped = errors.New("line after an undecodable line, not decoded")

// Lines is what Decode made of the lines of an input, in order: Values[i]
// is line i+1 decoded, unless Errs holds an error for i.
type Lines[T any] struct {
	Values []T
	// Errs holds the lines that are not values: ErrEmpty for an empty
	// line, the decoder's error for a line that is not a T. Past a bad
	// line, the block's other non-empty lines are not decoded: Err says
	// only that they are not empty.
	Errs map[int]error
}

// Err is line i's error, nil if it decoded. Of a line past an undecodable
// line it says only that it is not empty.
func (l *Lines[T]) Err(i int) error { return l.Errs[i] }

// CutShort is the index of the last non-empty line when it did not
// decode, the one bad line a writer that died mid-line leaves, which a
// caller may drop with a note; -1 when that line decoded, or when a line
// before it in its block did not (that line is the one to refuse).
func (l *Lines[T]) CutShort() int {
	for i := len(l.Values) - 1; i >= 0; i-- {
		switch err := l.Errs[i]; err {
		case ErrEmpty:
			continue
		case nil, errSkipped:
			return -1
		}
		return i
	}
	return -1
}

// Keep appends line i's value to kept, a prefix of Values that holds the
// values kept of the lines before i, and returns it. The value moves only
// when a line before it was not kept: a long run's events, 224 bytes each
// and nearly all kept, are not each copied onto themselves.
func (l *Lines[T]) Keep(kept []T, i int) []T {
	kept = kept[:len(kept)+1]
	if k := len(kept) - 1; k != i {
		kept[k] = l.Values[i]
	}
	return kept
}

// blockSize is how much of the input one worker decodes at a time: big
// enough that handing blocks over costs nothing, small enough that every
// core gets many.
const blockSize = 1 << 20

// Decode reads r and decodes each of its lines into a T, whose strings own
// makes its own (nil: every string is copied as it is decoded). A line longer
// than maxLine bytes is an error wrapping bufio.ErrTooLong, as
// bufio.Scanner's would be. An *os.File is read twice (once to count its
// lines) and never held whole in memory; any other reader is read whole
// first.
func Decode[T any](r io.Reader, maxLine int, own Own[T]) (*Lines[T], error) {
	var ra io.ReaderAt
	var size int64
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			off, err := f.Seek(0, io.SeekCurrent)
			if err != nil {
				return nil, fmt.Errorf("read: %w", err)
			}
			ra, size = io.NewSectionReader(f, off, st.Size()-off), st.Size()-off
		}
	}
	if ra == nil {
		data, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
		ra, size = bytes.NewReader(data), int64(len(data))
	}
	n, err := countLines(ra, size)
	if err != nil {
		return nil, err
	}
	out := &Lines[T]{Values: make([]T, n), Errs: map[int]error{}}
	hugePages(out.Values)
	return out, decodeBlocks(ra, size, maxLine, own, out)
}

// countLines counts the lines of the size bytes of ra.
func countLines(ra io.ReaderAt, size int64) (int, error) {
	buf := make([]byte, min(blockSize, size))
	n := 0
	var last byte = '\n'
	for off := int64(0); off < size; {
		k, err := ra.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if k == 0 && err != nil {
			return 0, fmt.Errorf("read: %w", err)
		}
		n += bytes.Count(buf[:k], []byte{'\n'})
		last = buf[k-1]
		off += int64(k)
	}
	if last != '\n' {
		n++ // a last line with no newline
	}
	return n, nil
}

// block is a run of whole lines, the first of which is line first (from 0).
type block struct {
	data  []byte
	first int
}

// decodeBlocks cuts the input into blocks of whole lines, in order, and has
// one worker per core decode them into out.
func decodeBlocks[T any](ra io.ReaderAt, size int64, maxLine int, own Own[T], out *Lines[T]) error {
	workers := runtime.GOMAXPROCS(0)
	blocks := make(chan block, workers)
	free := make(chan []byte, 2*workers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range workers {
		wg.Go(func() {
			errs := map[int]error{}
			strs := &Strings{}
			for b := range blocks {
				decodeBlock(b, maxLine, own, strs, out.Values, errs)
				select {
				case free <- b.data[:0]:
				default:
				}
			}
			mu.Lock()
			for i, err := range errs {
				out.Errs[i] = err
			}
			mu.Unlock()
		})
	}
	err := cut(ra, size, maxLine, free, blocks)
	close(blocks)
	wg.Wait()
	if err != nil {
		return err
	}
	first := -1
	for i, err := range out.Errs {
		if errors.Is(err, bufio.ErrTooLong) && (first < 0 || i < first) {
			first = i
		}
	}
	if first >= 0 {
		return fmt.Errorf("read: line %d: %w", first+1, out.Errs[first])
	}
	return nil
}

// cut reads the input and sends it on as blocks that end at a line's end.
func cut(ra io.ReaderAt, size int64, maxLine int, free chan []byte, blocks chan<- block) error {
	line := 0
	for off := int64(0); off < size; {
		var buf []byte
		select {
		case buf = <-free:
		default:
			buf = make([]byte, 0, min(blockSize, size))
		}
		want := int64(blockSize)
		for {
			n := min(want, size-off)
			buf = buf[:n]
			k, err := ra.ReadAt(buf, off)
			if int64(k) < n {
				return fmt.Errorf("read: %w", err)
			}
			if off+n == size {
				break
			}
			if end := bytes.LastIndexByte(buf, '\n'); end >= 0 {
				buf = buf[:end+1]
				break
			}
			// A line longer than the block: read a longer one, up to
			// the longest line allowed.
			if want > int64(maxLine)+2 {
				return fmt.Errorf("read: line %d: %w", line+1, bufio.ErrTooLong)
			}
			want *= 2
			buf = make([]byte, 0, want)
		}
		off += int64(len(buf))
		blocks <- block{data: buf, first: line}
		line += bytes.Count(buf, []byte{'\n'})
	}
	return nil
}

// decodeBlock decodes the lines of b into values and records in errs those
// that are not values. When it returns, no value refers to b's memory,
// which the next block reuses.
func decodeBlock[T any](b block, maxLine int, own Own[T], strs *Strings, values []T, errs map[int]error) {
	data, i := b.data, b.first
	bad := false
	for len(data) > 0 {
		line := data
		if end := bytes.IndexByte(data, '\n'); end >= 0 {
			line, data = data[:end], data[end+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		switch {
		case len(line) == 0:
			errs[i] = ErrEmpty
		case bad:
			errs[i] = errSkipped
		case len(line) > maxLine:
			errs[i], bad = fmt.Errorf("%w (%d bytes)", bufio.ErrTooLong, len(line)), true
		default:
			if err := decodeLine(line, &values[i], own, strs); err != nil {
				errs[i], bad = err, true
			}
		}
		i++
	}
}

// Own gives the strings of v, decoded without a copy and so still in the
// input's memory, memory of their own: it calls Strings.Share or
// Strings.Copy on every string in v, and on nothing else.
type Own[T any] func(v *T, s *Strings)

// Strings gives strings memory of their own, one worker's: Share makes
// equal strings one, Copy copies a string that is seldom seen twice. The
// zero value is ready to use.
type Strings struct {
	shared map[string]string
	// recent holds shared words by a hash of a few of their bytes: a
	// history's handful of words, asked for a million times, are found
	// there without hashing them whole.
	recent [256]string
}

// maxShared bounds the strings a worker shares: the words a run repeats
// are few, and a file of distinct ones must not grow the table without
// end; past the bound, a new word is copied.
const maxShared = 4096

// Share replaces *p by the equal string shared before, or by a copy that
// is shared from now on.
func (s *Strings) Share(p *string) {
	w := *p
	if w == "" {
		return
	}
	slot := &s.recent[(len(w)+int(w[0])*7+int(w[len(w)/2])*31+int(w[len(w)-1])*131)&0xff]
	if *slot == w {
		*p = *slot
		return
	}
	if v, ok := s.shared[w]; ok {
		*p, *slot = v, v
		return
	}
	s.Copy(p)
	if s.shared == nil {
		s.shared = map[string]string{}
	}
	if len(s.shared) < maxShared {
		s.shared[*p] = *p
	}
}

// Copy replaces *p by a copy of it.
func (s *Strings) Copy(p *string) { *p = strings.Clone(*p) }

// noCopy decodes strings as parts of the input, for an Own to settle.
var noCopy = []json.DecodeOptionFunc{json.DecodeNoCopyString()}

// decodeLine decodes line into *v. The decoder's verdict is the same with
// and without copies; only where the strings live differs.
func decodeLine[T any](line []byte, v *T, own Own[T], strs *Strings) error {
	if own == nil {
		return json.Unmarshal(line, v)
	}
	if err := json.UnmarshalWithOption(line, v, noCopy...); err != nil {
		// The value of a line that is not one is never used, and the
		// error may quote the input: both are made again with copies,
		// so that neither refers to memory the next block reuses. A
		// block holds at most one such line.
		var zero T
		*v = zero
		return json.Unmarshal(line, v)
	}
	own(v, strs)
	return nil
}
