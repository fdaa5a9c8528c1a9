// Package history holds the events a run records: Jepsen's invoke/ok/fail/info
// vocabulary, one JSON object per line, timed on the kernel's monotonic clock.
package history

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lockbench/lockbench/jsonl"
	"golang.org/x/sys/unix"
)

// Type is the kind of an event, as in Jepsen: an invocation, and its completion
// as ok (it happened), fail (it certainly did not happen) or info (unknown).
type Type string

const (
	Invoke Type = "invoke"
	OK     Type = "ok"
	Fail   Type = "fail"
	Info   Type = "info"
)

// Operation names used in events.
const (
	Acquire   = "acquire"
	Read      = "read"
	Write     = "write"
	Release   = "release"
	LeaseLost = "lease-lost"
	// Renew is an extension of a lease (a Redis PEXPIRE, a Redlock Extend, an
	// etcd keep-alive), recorded under the client's lease process.
	Renew = "renew"
	// Nemesis operations: a fault starts and a fault is healed.
	Start = "start"
	Stop  = "stop"
	// Healthy is a lone nemesis event recorded after a fault's heal, once
	// the service answers the checks bring-up uses again (info), or once
	// the bound on that wait ran out (fail, with the reason): a fault is in
	// force until its healthy, since a healed node that has not come back
	// still keeps the lock from everyone.
	Healthy = "healthy"
)

// Nemesis is the process name of the fault injector.
const Nemesis = "nemesis"

// KillClient is the fault that SIGKILLs clients: its victims never come
// back, so their records end there, with whatever they had invoked still
// open, and whatever lock they held is left to expire.
const KillClient = "kill-client"

// Killed names the clients e, a nemesis event, says were killed.
func Killed(e Event) []string {
	if e.Process == Nemesis && e.F == Start && e.Type == Info && e.Fault == KillClient {
		return e.Targets
	}
	return nil
}

// leaseSuffix names a client's lease process: "c3/lease" records c3's
// renewals, which run beside its operations, so that pairing by position
// (one operation outstanding per process) holds for both.
const leaseSuffix = "/lease"

// LeaseProcess is the name of client's lease process.
func LeaseProcess(client string) string { return client + leaseSuffix }

// LeaseOwner is the client whose lease process is process; ok is false for
// any other process.
func LeaseOwner(process string) (string, bool) {
	return strings.CutSuffix(process, leaseSuffix)
}

// operation reports whether f is an event name a history may hold, and
// whether it names a lone event, one that stands for itself with no
// invocation. A switch rather than a map: decoding asks it of each of a
// long run's million events, on the one core that judges them in order.
func operation(f string) (known, lone bool) {
	switch f {
	case Acquire, Read, Write, Release, Renew, Start, Stop:
		return true, false
	case LeaseLost, Healthy:
		return true, true
	}
	return false, false
}

// isLone reports whether f names a lone event.
func isLone(f string) bool {
	_, lone := operation(f)
	return lone
}

// Event is one line of history.jsonl.
type Event struct {
	Index   int64  `json:"index"`
	Time    int64  `json:"time"` // nanoseconds since the run's epoch
	Process string `json:"process"`
	Type    Type   `json:"type"`
	F       string `json:"f"`
	Key     string `json:"key,omitempty"`
	// Value is the value read, or the value a write tries to store; in the
	// set workload, the element a write adds.
	Value *int64 `json:"value,omitempty"`
	// Set is the set read, or the set a write tries to store (set workload).
	Set []int64 `json:"set,omitempty"`
	// Token is the fencing token the lock issued (acquire ok) or that the
	// request carried (read, write); 0 means none.
	Token int64 `json:"token,omitempty"`
	// Req joins a read or write to the store's log entry for it.
	Req string `json:"req,omitempty"`
	// Fault and Targets describe a nemesis event.
	Fault   string   `json:"fault,omitempty"`
	Shape   string   `json:"shape,omitempty"`
	Targets []string `json:"targets,omitempty"`
	Error   string   `json:"error,omitempty"`
	// Attempt is, on an acquire ok, when the request that took the lock was
	// sent: a client retries while the lock is taken, and the lease starts
	// with the last attempt, not with the wait. On etcd, whose lock lives as
	// long as the session's lease, it is when the newest grant or keep-alive
	// of that lease acknowledged before the lock was taken was sent.
	Attempt int64 `json:"attempt,omitempty"`
	// TTL is the lease's time to live in ns, as granted by the acquire ok or
	// the renew ok it is on.
	TTL int64 `json:"ttl,omitempty"`
}

// Int returns a pointer to v, for Event.Value.
func Int(v int64) *int64 { return &v }

// Mono reads CLOCK_MONOTONIC. Every container of a run shares the engine's
// kernel, so readings from the harness, the clients and the store compare
// directly; Go's own monotonic clock is private to each process.
func Mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err))
	}
	return ts.Nano()
}

// Writer appends events to a file as they happen, one write per event, so a
// crash of the harness leaves every event recorded so far on disk.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	next int64
	err  error
}

// Create opens path for a new history.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create history: %w", err)
	}
	return &Writer{f: f}, nil
}

// Append numbers e and writes it; it returns the event as written.
func (w *Writer) Append(e Event) (Event, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return e, w.err
	}
	e.Index = w.next
	line, err := json.Marshal(e)
	if err != nil {
		return e, fmt.Errorf("encode event: %w", err)
	}
	if _, err := w.f.Write(append(line, '\n')); err != nil {
		w.err = fmt.Errorf("write history: %w", err)
		return e, w.err
	}
	w.next++
	return e, nil
}

// Close closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close history: %w", err)
	}
	return nil
}

// ErrTruncated marks a history whose last line is incomplete, as a crash of
// the harness can leave it; the events before it are returned with it.
var ErrTruncated = errors.New("history ends in an incomplete line")

// ErrMalformed marks a history that no run can have recorded: it is refused,
// never judged.
var ErrMalformed = errors.New("malformed history")

// Decode reads a history. A malformed line in the middle, or a structural
// impossibility (see structure), is an error wrapping ErrMalformed and
// naming the line; an incomplete last line returns the events before it
// and ErrTruncated.
func Decode(r io.Reader) ([]Event, error) { return decode(r, ownStrings) }

// decode is Decode with the strings owned by own, or copied as they are
// decoded if own is nil, the way the tests hold Decode to.
func decode(r io.Reader, own jsonl.Own[Event]) ([]Event, error) {
	lines, err := jsonl.Decode(r, maxLine, own)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	// The lines were decoded on every core; what each may be depends on
	// the ones before it, so they are judged in order, and the events
	// moved down over the lines that hold none.
	events := lines.Values[:0]
	cut := lines.CutShort()
	st := newStructure()
	for i := range lines.Values {
		n := i + 1
		switch lerr := lines.Err(i); {
		case lerr == jsonl.ErrEmpty || i == cut:
			continue
		case lerr != nil:
			return nil, fmt.Errorf("%w: line %d: %w", ErrMalformed, n, lerr)
		}
		e := &lines.Values[i]
		if err := e.validate(); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrMalformed, n, err)
		}
		if err := st.add(n, e); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrMalformed, n, err)
		}
		events = lines.Keep(events, i)
	}
	if len(events) == 0 {
		events = nil
	}
	if cut >= 0 {
		return slices.Clip(events), fmt.Errorf("%w (line %d: %v)", ErrTruncated, cut+1, lines.Err(cut))
	}
	return slices.Clip(events), nil
}

// ownStrings gives an event's strings memory of their own for jsonl.Decode:
// the words a history repeats are shared, a request's id, which no other
// request has, is copied.
func ownStrings(e *Event, s *jsonl.Strings) {
	s.Share(&e.Process)
	s.Share((*string)(&e.Type))
	s.Share(&e.F)
	s.Share(&e.Key)
	s.Copy(&e.Req)
	s.Share(&e.Fault)
	s.Share(&e.Shape)
	for i := range e.Targets {
		s.Share(&e.Targets[i])
	}
	s.Share(&e.Error)
}

// maxLine bounds a history's line: a set workload's event carries the whole
// set, which grows with the run.
const maxLine = 16 * 1024 * 1024

// DecodeFile reads a history file.
func DecodeFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	return Decode(f)
}

// InTimeOrder sorts a history by time and renumbers its indexes from 0, so
// that index order is time order, as Jepsen's tools assume; it reports
// whether anything changed. The sort is stable: each process stamps its
// events in the order it writes them, so its own events keep their order,
// and with it every pairing of an invocation with its completion.
func InTimeOrder(events []Event) bool {
	// A run that ended well wrote its history in time order: checking
	// that is one pass, while a stable sort of events this large moves
	// and compares them anyway.
	changed := !slices.IsSortedFunc(events, byTime)
	if changed {
		slices.SortStableFunc(events, byTime)
	}
	for i := range events {
		changed = changed || events[i].Index != int64(i)
		events[i].Index = int64(i)
	}
	return changed
}

func byTime(a, b Event) int { return cmp.Compare(a.Time, b.Time) }

// Rewrite replaces the history at path with events; a crash midway leaves
// the old file whole.
func Rewrite(path string, events []Event) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("rewrite history: %w", err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	enc := json.NewEncoder(w)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			tmp.Close()
			return fmt.Errorf("rewrite history: %w", err)
		}
	}
	if err := errors.Join(w.Flush(), tmp.Chmod(0o644), tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("rewrite history: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rewrite history: %w", err)
	}
	return nil
}

func (e Event) validate() error {
	switch e.Type {
	case Invoke, OK, Fail, Info:
	default:
		return fmt.Errorf("event %d: unknown type %q", e.Index, e.Type)
	}
	if e.Process == "" {
		return fmt.Errorf("event %d: no process", e.Index)
	}
	if e.F == "" {
		return fmt.Errorf("event %d: no f", e.Index)
	}
	known, lone := operation(e.F)
	if !known {
		return fmt.Errorf("event %d: unknown f %q", e.Index, e.F)
	}
	if e.Time < 0 {
		return fmt.Errorf("event %d: negative time %d", e.Index, e.Time)
	}
	switch {
	case e.F == Healthy && e.Process != Nemesis:
		return fmt.Errorf("event %d: %s is the nemesis's event, not %s's", e.Index, e.F, e.Process)
	case e.F == Healthy && e.Type != Info && e.Type != Fail:
		return fmt.Errorf("event %d: %s is a lone event and must be info or fail, not %s", e.Index, e.F, e.Type)
	case lone && e.F != Healthy && e.Type != Info:
		return fmt.Errorf("event %d: %s is a lone event and must be info, not %s", e.Index, e.F, e.Type)
	}
	return nil
}

// structure checks what one line cannot show: indexes grow; each process's
// times never go backwards (each stamps and writes its events in order);
// a completion answers an open invocation of the same operation on its
// process, and comes no earlier; a process invokes one operation at a
// time. Lone events, and the nemesis's completions (a fault it skipped is
// a lone failure), need no invocation.
type structure struct {
	lastIndex int64
	procs     map[string]*procState
}

type procState struct {
	time int64
	// open is the open invocation's f and line, "" if none.
	open     string
	openLine int
	openTime int64
}

func newStructure() *structure { return &structure{lastIndex: -1, procs: map[string]*procState{}} }

func (s *structure) add(line int, e *Event) error {
	if e.Index <= s.lastIndex {
		return fmt.Errorf("event index %d does not follow %d", e.Index, s.lastIndex)
	}
	s.lastIndex = e.Index
	p := s.procs[e.Process]
	if p == nil {
		p = &procState{}
		s.procs[e.Process] = p
	}
	switch {
	case e.Type != Invoke && p.open == e.F && e.Time < p.openTime:
		return fmt.Errorf("%s's %s completes at %d, before its invocation at %d (line %d)", e.Process, e.F, e.Time, p.openTime, p.openLine)
	case e.Time < p.time:
		return fmt.Errorf("%s's time goes backwards, from %d to %d", e.Process, p.time, e.Time)
	}
	p.time = e.Time
	switch {
	case isLone(e.F):
	case e.Type == Invoke && p.open != "" && e.Process != Nemesis:
		return fmt.Errorf("%s invokes %s while its %s of line %d is still open", e.Process, e.F, p.open, p.openLine)
	case e.Type == Invoke:
		p.open, p.openLine, p.openTime = e.F, line, e.Time
	case p.open == e.F:
		p.open = ""
	case e.Process != Nemesis:
		return fmt.Errorf("%s completes %s (%s) with no open invocation of it", e.Process, e.F, e.Type)
	}
	return nil
}

// ClientNumber is the number in a client's process name ("c3" is 3);
// ok is false for any other process.
func ClientNumber(process string) (int, bool) {
	rest, ok := strings.CutPrefix(process, "c")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 1
}

// Seconds formats an event time for people.
func Seconds(t int64) string { return fmt.Sprintf("%.3f s", float64(t)/1e9) }
