// Package store holds the resource store: a small key-value server that
// checks fencing tokens and logs every request with its outcome, in the order
// it applied them. It is the shared resource the locks protect.
package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/lockbench/lockbench/jsonl"
)

// Fence is how the store treats fencing tokens.
type Fence string

const (
	// FenceNone accepts every request: the store trusts the lock.
	FenceNone Fence = "none"
	// FenceWrites rejects a write whose token is lower than the highest
	// token seen on a write.
	FenceWrites Fence = "writes"
	// FenceAll also registers and checks tokens on reads.
	FenceAll Fence = "all"
)

// ParseFence validates a fence mode name.
func ParseFence(s string) (Fence, error) {
	switch f := Fence(s); f {
	case FenceNone, FenceWrites, FenceAll:
		return f, nil
	}
	return "", fmt.Errorf("unknown fence mode %q (want none, writes or all)", s)
}

// Outcomes of a request.
const (
	Accepted = "accepted"
	Rejected = "rejected"
)

// Entry is one line of store.log.
type Entry struct {
	Seq    int64  `json:"seq"`
	Time   int64  `json:"time"` // nanoseconds since the run's epoch
	Req    string `json:"req"`
	Client string `json:"client"`
	Op     string `json:"op"` // read or write
	Key    string `json:"key"`
	Token  int64  `json:"token,omitempty"`
	// Value is what a read returned or what a write stored (or tried to).
	Value int64 `json:"value"`
	// Set is what a read returned or a write stored, for keys holding sets.
	Set []int64 `json:"set,omitempty"`
	// Prev is the key's value when the request was applied.
	Prev    int64  `json:"prev"`
	Outcome string `json:"outcome"`
	// MaxToken is the highest token the store had seen (by its fence mode's
	// rules) before this request.
	MaxToken int64  `json:"max_token,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// ErrMalformed marks a store log no store can have written: it is refused,
// never judged.
var ErrMalformed = errors.New("malformed store log")

// ErrTruncated marks a store log whose last line is incomplete, as a store
// killed mid-write, or a copy of a log still being written, leaves it; the
// entries before it are returned with it. A history cut short is judged
// the same way (history.ErrTruncated): its last line is a request the store
// may or may not have applied, which no checker can lean on either way.
var ErrTruncated = errors.New("store log ends in an incomplete line")

// ReadLog decodes a store log. An incomplete last line returns the entries
// before it and ErrTruncated; every other error but a failed read wraps
// ErrMalformed and names the line.
func ReadLog(r io.Reader) ([]Entry, error) { return readLog(r, ownStrings) }

// readLog is ReadLog with the strings owned by own, or copied as they are
// decoded if own is nil, the way the tests hold ReadLog to.
func readLog(r io.Reader, own jsonl.Own[Entry]) ([]Entry, error) {
	lines, err := jsonl.Decode(r, maxLine, own)
	if err != nil {
		return nil, fmt.Errorf("read store log: %w", err)
	}
	// Decoded on every core; judged in order, each entry against the
	// ones before it, and moved down over the lines that hold none.
	out := lines.Values[:0]
	cut := lines.CutShort()
	for i := range lines.Values {
		switch err := lines.Err(i); {
		case err == jsonl.ErrEmpty || i == cut:
			continue
		case err != nil:
			return nil, fmt.Errorf("%w: line %d: %w", ErrMalformed, i+1, err)
		}
		e := &lines.Values[i]
		if err := e.validate(out); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrMalformed, i+1, err)
		}
		out = lines.Keep(out, i)
	}
	if len(out) == 0 {
		out = nil
	}
	if cut >= 0 {
		return slices.Clip(out), fmt.Errorf("%w (line %d: %v)", ErrTruncated, cut+1, lines.Err(cut))
	}
	return slices.Clip(out), nil
}

// ownStrings gives an entry's strings memory of their own for jsonl.Decode:
// the words a log repeats are shared, a request's id is copied.
func ownStrings(e *Entry, s *jsonl.Strings) {
	s.Copy(&e.Req)
	s.Share(&e.Client)
	s.Share(&e.Op)
	s.Share(&e.Key)
	s.Share(&e.Outcome)
	s.Share(&e.Reason)
}

// maxLine bounds a store log's line.
const maxLine = 1024 * 1024

// ReadLogFile reads a store log file.
func ReadLogFile(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open store log: %w", err)
	}
	defer f.Close()
	return ReadLog(f)
}

// validate checks an entry on its own and against the entries before it.
// Seqs grow because the store numbers requests in the order it applies
// them. Times need not: a log read back from etcd carries each writer's
// own send time in commit order.
func (e *Entry) validate(before []Entry) error {
	switch {
	case e.Outcome != Accepted && e.Outcome != Rejected:
		return fmt.Errorf("unknown outcome %q", e.Outcome)
	case e.Op != "read" && e.Op != "write":
		return fmt.Errorf("unknown op %q", e.Op)
	case e.Time < 0:
		return fmt.Errorf("seq %d: negative time %d", e.Seq, e.Time)
	case e.Req == "":
		return fmt.Errorf("seq %d: no req", e.Seq)
	case len(before) > 0 && e.Seq <= before[len(before)-1].Seq:
		return fmt.Errorf("seq %d does not follow %d", e.Seq, before[len(before)-1].Seq)
	}
	return nil
}
