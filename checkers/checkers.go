// Package checkers judges a run after the fact: from the client history and
// the store's log it decides whether the lock kept the counter safe, and
// names the clients, tokens and times that show it when it did not.
//
// Every checker is a pure function of its Input, so a run can be re-checked
// from its files alone and gets the same verdict every time.
package checkers

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// Verdict is a checker's conclusion.
type Verdict string

const (
	Valid   Verdict = "valid"
	Invalid Verdict = "invalid"
	// Unknown means the checker could not decide, or its evidence disagrees
	// with itself; it is never a pass.
	Unknown Verdict = "unknown"
	// Skipped means the property does not apply to this run (a lock without
	// fencing tokens has no token order to check); it does not affect the
	// overall verdict.
	Skipped Verdict = "skipped"
)

// Input is what a run leaves behind.
type Input struct {
	History []history.Event `json:"history"`
	Store   []store.Entry   `json:"store"`
	// NoStore, when set, says why the run has no store log at all (as
	// opposed to a log of no requests): what the store did is unknown,
	// and the checkers that judge it say so, with this as their reason.
	NoStore string `json:"no_store,omitempty"`
	// Key is the counter's key; "" takes every key.
	Key string `json:"key"`
	// Lease describes the lock's leases, for the exclusion checker.
	Lease Lease `json:"lease"`
	// Name, when set, names a value for people: the set workload checks
	// sets numbered as counter values, and its messages must show sets.
	Name valueNamer `json:"-"`
	// shared is what the checkers derive from History, derived once for
	// all of them (see Prepare); nil, each derives its own.
	shared *derived
}

// Prepare returns in ready to be judged by several checkers side by side:
// what each of them would derive from its history (the operations paired,
// the critical sections) is derived once, by the first that needs it, and
// shared by the others. On a long run each derivation is tens of
// milliseconds and tens of megabytes, and the checkers share them four
// ways.
func Prepare(in Input) Input {
	in.shared = &derived{history: in.History, store: in.Store, key: in.Key}
	return in
}

// derived is what the checkers derive from one history, store log and key.
type derived struct {
	history  []history.Event
	store    []store.Entry
	key      string
	refsOnce sync.Once
	refs     []history.Ref
	procs    int
	sectOnce sync.Once
	sections []Section
	// ledgerMu guards the ledger, built by its first reader and dropped
	// once every reader has taken it: a check keeps the derivations until
	// its report is drawn, and this one, tens of megabytes for a long
	// run, the report does not need.
	ledgerMu    sync.Mutex
	ledger      *ledger
	ledgerBuilt bool
	ledgerTaken ledgerReader
}

// derived is the input's shared derivations, nil unless they were
// prepared for this very history and key: a checker that judges a view of
// the input (SetView's) must not take the original's.
func (in Input) derived() *derived {
	d := in.shared
	if d == nil || d.key != in.Key || !sameStart(d.history, in.History) {
		return nil
	}
	return d
}

// Refs is history.Refs of the input's history; the caller must not change
// what it returns.
func (in Input) Refs() ([]history.Ref, int) {
	d := in.derived()
	if d == nil {
		return history.Refs(in.History)
	}
	d.refsOnce.Do(func() { d.refs, d.procs = history.Refs(in.History) })
	return d.refs, d.procs
}

// Sections is Sections of the input's history and key, which the caller
// must not change.
func (in Input) Sections() []Section {
	d := in.derived()
	if d == nil {
		return sectionsOf(in)
	}
	d.sectOnce.Do(func() { d.sections = sectionsOf(in) })
	return d.sections
}

// ledgerReader is who reads the ledger: a workload's data checker and its
// linearizability checker both judge by it, and each must see what the
// other sees.
type ledgerReader uint8

const (
	dataReader ledgerReader = 1 << iota
	linearReader
	allReaders = dataReader | linearReader
)

// ledger is newLedger of the input for reader, which must not change it.
func (in Input) ledger(reader ledgerReader) *ledger {
	d := in.derived()
	if d == nil || !sameStart(d.store, in.Store) {
		return newLedger(in)
	}
	d.ledgerMu.Lock()
	defer d.ledgerMu.Unlock()
	l := d.ledger
	if !d.ledgerBuilt {
		l, d.ledgerBuilt = newLedger(in), true
	} else if l == nil {
		// Every reader took it already; one that checks again builds
		// its own.
		return newLedger(in)
	}
	d.ledger, d.ledgerTaken = l, d.ledgerTaken|reader
	if d.ledgerTaken == allReaders {
		d.ledger = nil
	}
	return l
}

// withLedger prepares in, a view of another input, with the ledger l.
func (in Input) withLedger(l *ledger) Input {
	in.shared = &derived{history: in.History, store: in.Store, key: in.Key, ledger: l, ledgerBuilt: true}
	return in
}

// sameStart reports whether a and b are the same slice: the same length
// and the same first element.
func sameStart[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// valueNamer names a counter value for people; nil writes the number.
type valueNamer func(int64) string

func (n valueNamer) of(v int64) string {
	if n == nil {
		return strconv.FormatInt(v, 10)
	}
	return n(v)
}

// Anomaly is one piece of evidence against a run.
type Anomaly struct {
	Kind      string   `json:"kind"`
	Message   string   `json:"message"`
	Events    []int64  `json:"events,omitempty"`     // history indexes
	StoreSeqs []int64  `json:"store_seqs,omitempty"` // store log seqs
	Clients   []string `json:"clients,omitempty"`
	Tokens    []int64  `json:"tokens,omitempty"`
	// Time is when the decisive event happened, in ns since the run's epoch.
	Time int64 `json:"time"`
}

// Result is one checker's verdict and its evidence.
type Result struct {
	Checker string  `json:"checker"`
	Valid   Verdict `json:"valid"`
	Summary string  `json:"summary"`
	// Reason says why the verdict is unknown or skipped.
	Reason string           `json:"reason,omitempty"`
	Counts map[string]int64 `json:"counts"`
	// Anomalies holds at most maxAnomalies entries; Counts has the totals.
	Anomalies []Anomaly `json:"anomalies,omitempty"`
	// Windows are periods worth seeing on a timeline (exclusion checker:
	// two certain holders, stale beliefs); at most maxAnomalies.
	Windows []Window `json:"windows,omitempty"`
	// Faults is what each injected fault did to the holders (exclusion
	// checker).
	Faults []FaultEffect `json:"faults,omitempty"`
}

// Checker judges one property of a run.
type Checker interface {
	Name() string
	Check(Input) Result
}

// maxAnomalies bounds the evidence kept per checker: a broken lock can
// produce thousands of identical anomalies, and the first ones tell the story.
const maxAnomalies = 100

// All returns every checker, in the order results are reported.
// linearTimeout bounds the linearizability search; 0 means no bound.
func All(linearTimeout time.Duration) []Checker {
	return []Checker{Linearizable{Timeout: linearTimeout}, Fence{}, LostUpdates{}, Exclusion{}, progress()}
}

// progress is the progress checker every workload runs: 5 sections before
// the first fault, and a deadlock from 3 TTLs of waiting.
func progress() Progress { return Progress{MinSections: 5, StallTTLs: 3} }

// Overall combines verdicts: any invalid result makes the run invalid, and
// a run is valid only if something was actually checked and passed.
func Overall(rs []Result) Verdict {
	var valid, unknown bool
	for _, r := range rs {
		switch r.Valid {
		case Invalid:
			return Invalid
		case Valid:
			valid = true
		case Skipped:
		default:
			unknown = true
		}
	}
	if unknown || !valid {
		return Unknown
	}
	return Valid
}

// withoutStore makes r unknown when the run has no store log, and reports
// whether it did: a checker of the store's decisions judges nothing
// without them, and an empty log would have it find every write lost or
// every request missing.
func withoutStore(r *Result, in Input) bool {
	if in.NoStore == "" {
		return false
	}
	r.Valid, r.Reason = Unknown, in.NoStore
	r.Summary = "undecided: the run has no store log"
	return true
}

func newResult(name string) Result {
	return Result{Checker: name, Counts: map[string]int64{}}
}

// add records an anomaly, keeping only the first maxAnomalies; count is the
// Counts key that tallies every one of them.
func (r *Result) add(count string, a Anomaly) {
	if r.tally(count) {
		r.Anomalies = append(r.Anomalies, a)
	}
}

// tally counts an anomaly and reports whether it is among those kept, so
// that a checker formats only the anomalies it keeps: a broken lock can
// produce hundreds of thousands.
func (r *Result) tally(count string) bool {
	r.Counts[count]++
	return len(r.Anomalies) < maxAnomalies
}

// zero makes counts that did not occur show up as 0 in results.json.
func zero(counts map[string]int64, keys ...string) {
	for _, k := range keys {
		counts[k] += 0
	}
}

func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// onKey reports whether a read or write op (by its invocation) touches key;
// other ops are on every key.
func onKey(call *history.Event, key string) bool {
	if key == "" || (call.F != history.Read && call.F != history.Write) {
		return true
	}
	return call.Key == key
}

// storeOnKey returns the entries of log on key, sharing log when they all
// are, as they are in a run with one counter.
func storeOnKey(log []store.Entry, key string) []store.Entry {
	if key == "" || !slices.ContainsFunc(log, func(e store.Entry) bool { return e.Key != key }) {
		return log
	}
	var out []store.Entry
	for _, e := range log {
		if e.Key == key {
			out = append(out, e)
		}
	}
	return out
}

// reqLinks points anomalies back into the history by the reqs of the
// requests they name. Only the anomalies kept need their events, so the
// history is searched once, at the end, for the reqs they name, rather than
// indexed whole on every check.
type reqLinks struct {
	anomaly []int // into Result.Anomalies
	reqs    [][]string
}

// link has anomaly i of the result name the events of reqs.
func (l *reqLinks) link(i int, reqs ...string) {
	l.anomaly = append(l.anomaly, i)
	l.reqs = append(l.reqs, reqs)
}

// resolve sets each linked anomaly's Events to the history indexes of the
// events carrying its reqs, sorted and without repeats.
func (l *reqLinks) resolve(h []history.Event, as []Anomaly) {
	if len(l.anomaly) == 0 {
		return
	}
	events := map[string][]int64{}
	for _, reqs := range l.reqs {
		for _, req := range reqs {
			events[req] = nil
		}
	}
	for i := range h {
		if req := h[i].Req; req != "" {
			if evs, ok := events[req]; ok {
				events[req] = append(evs, h[i].Index)
			}
		}
	}
	for k, i := range l.anomaly {
		var out []int64
		for _, req := range l.reqs[k] {
			out = append(out, events[req]...)
		}
		slices.Sort(out)
		as[i].Events = slices.Compact(out)
	}
}

// calls counts the operations of refs that invoke f (lone events
// included), the most a checker can collect of them: sized up front, what
// it collects from a long run is not copied again and again as it grows.
func calls(h []history.Event, refs []history.Ref, f string) int {
	n := 0
	for _, o := range refs {
		if h[o.Call].F == f {
			n++
		}
	}
	return n
}

// endOfHistory is the latest time in h: an operation whose outcome is unknown
// may take effect at any moment up to it.
func endOfHistory(h []history.Event) int64 {
	var end int64
	for _, e := range h {
		end = max(end, e.Time)
	}
	return end
}
